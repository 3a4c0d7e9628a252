// Test helpers for the tests of loopr's git calls (worktrees_test.cpp,
// merges_test.cpp): plain, unhardened git to set repositories up and to show
// that planted traps are armed, a repository with one commit, and an
// environment variable set for one test.
//
// Traps: scripts planted where git might run them (hooks, drivers), each
// recording in <tree>/markers/ that it ran.
//
// plain_git is hermetic: no user or system config, a fixed identity
// ("test <test@localhost>"), never the developer's home.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "loops/git/git_command.hpp"
#include "tests/support/spawn_and_drain.hpp"
#include "tests/support/temp_tree.hpp"

namespace loopr::test {

// Sets an environment variable for one test and puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_.c_str(), old_->c_str(), 1);
    } else {
      ::unsetenv(name_.c_str());
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

struct PlainRun {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

// Runs /usr/bin/git (or the git loopr would use) the ordinary way, with no
// hardening: how a test sets repositories up, and the control that shows the
// traps work. Its environment is still hermetic (no user or system config).
inline PlainRun plain_git(const std::string& cwd, std::vector<std::string> args,
                          const std::string& home = "/nonexistent") {
  Result<std::string> git = loops::git_executable();
  if (!git) {
    ADD_FAILURE() << git.error().message;
    return {};
  }
  args.insert(args.begin(), *git);
  std::vector<std::string> env = {"PATH=/usr/bin:/bin",
                                  "HOME=" + home,
                                  "LANG=C",
                                  "GIT_CONFIG_NOSYSTEM=1",
                                  "GIT_AUTHOR_NAME=test",
                                  "GIT_AUTHOR_EMAIL=test@localhost",
                                  "GIT_COMMITTER_NAME=test",
                                  "GIT_COMMITTER_EMAIL=test@localhost"};
  if (home == "/nonexistent") env.emplace_back("GIT_CONFIG_GLOBAL=/dev/null");
  SpawnOptions options;
  options.cwd = cwd;
  options.environment = std::move(env);
  options.stderr_into_stdout = true;
  const std::string binary = args.front();
  args.erase(args.begin());
  PlainRun run;
  try {
    SpawnedRun spawned = spawn_and_drain(binary, args, options);
    run.exit_code = spawned.exit_code;
    run.output = std::move(spawned.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "posix_spawn git: " << e.what();
  }
  return run;
}

// plain_git that must succeed (a fatal test failure otherwise: ASSERT_NO_FATAL_FAILURE).
inline void must_git(const std::string& cwd, std::vector<std::string> args) {
  const PlainRun run = plain_git(cwd, args);
  ASSERT_EQ(run.exit_code, 0) << "git " << (args.empty() ? "" : args[0]) << ": " << run.output;
}

// A repository at <tree>/<name> on branch main with one commit (README.md).
inline std::string make_repo(const TempTree& tree, const std::string& name = "repo") {
  const std::string repo = tree.path(name);
  must_git(tree.root(), {"init", "-q", "-b", "main", repo});
  tree.write(name + "/README.md", "hello\n");
  must_git(repo, {"add", "-A"});
  must_git(repo, {"commit", "-q", "-m", "init"});
  return repo;
}

// The sha `rev` names in `repo`, or "" when it names nothing.
inline std::string plain_head(const std::string& repo, const std::string& rev = "HEAD") {
  const PlainRun run = plain_git(repo, {"rev-parse", "--verify", "-q", rev});
  std::string out = run.output;
  while (!out.empty() && out.back() == '\n')
    out.pop_back();
  return run.exit_code == 0 ? out : std::string();
}

inline bool is_sha(const std::string& text) {
  return text.size() == 40 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isxdigit(c) != 0; });
}

// `git config --file FILE KEY VALUE`.
inline void set_config(const TempTree& tree, const std::string& file, const std::string& key,
                       const std::string& value) {
  must_git(tree.root(), {"config", "--file", file, key, value});
}

// A script at `relative` that records that it ran (appends to
// markers/<marker>), then passes stdin through (so that, as a clean or smudge
// filter under plain git, it does not break anything).
inline void plant_trap(const TempTree& tree, const std::string& relative,
                       const std::string& marker) {
  tree.mkdir("markers");
  tree.write(relative, "#!/bin/sh\necho ran >> " + tree.path("markers/" + marker) + "\nexec cat\n");
  ASSERT_EQ(::chmod(tree.path(relative).c_str(), 0755), 0);
}

// The markers of the traps that ran, sorted.
inline std::vector<std::string> traps_that_ran(const TempTree& tree) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(tree.path("markers"), ec)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace loopr::test
