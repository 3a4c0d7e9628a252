// Finds host processes whose command line contains a marker, to prove that
// no process of a job survived it. Tests give each job a unique marker
// (e.g. "sleep 1000.4242"), so parallel tests cannot confuse each other.
#pragma once

#include <dirent.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace loopr::test {

inline std::vector<int> processes_with(const std::string& marker) {
  std::vector<int> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = ::readdir(proc)) {
    const std::string name = entry->d_name;
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in("/proc/" + name + "/cmdline", std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    std::string cmdline = text.str();
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(marker) != std::string::npos) found.push_back(std::stoi(name));
  }
  ::closedir(proc);
  return found;
}

// For the one case where the kernel kills asynchronously (the runner itself
// was killed): polls for up to `bound`, returning as soon as none is left.
inline std::vector<int> processes_with_after(const std::string& marker,
                                             std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    auto found = processes_with(marker);
    if (found.empty() || std::chrono::steady_clock::now() > deadline) return found;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Polls until a process with `marker` exists (true) or `bound` passes.
inline bool wait_for_process(const std::string& marker, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (processes_with(marker).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace loopr::test
