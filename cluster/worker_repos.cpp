#include "cluster/worker_repos.hpp"

#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "loops/git/git_command.hpp"

namespace loopr::cluster {

namespace fs = std::filesystem;
using loops::GitCommand;
using loops::GitTarget;

namespace {

// Commits of this repository the worker holds, newest first (at most 16).
std::vector<std::string> held_commits(const GitCommand& git) {
  auto listed = git.output({"for-each-ref", "--sort=-committerdate", "--count=16",
                            "--format=%(objectname)", "refs/loopr/have/"},
                           loops::read_only_options());
  std::vector<std::string> out;
  if (!listed) return out;
  std::size_t start = 0;
  while (start < listed->size()) {
    const auto end = listed->find('\n', start);
    std::string line =
        listed->substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (line.size() == 40) out.push_back(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::atomic<unsigned> bundle_counter{0};

}  // namespace

WorkerRepos::WorkerRepos(std::string state_folder) : state_(std::move(state_folder)) {
  std::error_code ec;
  fs::create_directories(state_ + "/repos", ec);
  fs::create_directories(state_ + "/work", ec);
  fs::create_directories(state_ + "/tmp", ec);
}

std::mutex& WorkerRepos::lock_for(const std::string& key) {
  std::lock_guard lock(locks_mutex_);
  auto& slot = locks_[key];
  if (!slot) slot = std::make_unique<std::mutex>();
  return *slot;
}

Result<void> WorkerRepos::ensure_commit(const std::string& bare, const std::string& commit,
                                        const FetchBundle& fetch) {
  auto git = GitCommand::bind(GitTarget{bare, ""});
  if (!git) return std::move(git).error();
  auto present = git->run({"cat-file", "-e", commit + "^{commit}"}, loops::read_only_options());
  if (present && present->succeeded()) return {};
  // Unique: two repositories may want the same commit at once.
  const std::string path = state_ + "/tmp/" + fs::path(bare).stem().string() + "-" + commit + "-" +
                           std::to_string(bundle_counter.fetch_add(1)) + ".bundle";
  struct Remove {
    std::string path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{path};
  if (auto fetched = fetch(held_commits(*git), path); !fetched) return fetched;
  if (auto r = git->output({"bundle", "unbundle", path}); !r) return std::move(r).error();
  if (auto r = git->output({"update-ref", "refs/loopr/have/" + commit, commit}); !r) {
    return std::move(r).error();
  }
  // Keep the newest 32 commits named; git's gc may take the rest.
  auto refs = git->output(
      {"for-each-ref", "--sort=-committerdate", "--format=%(refname)", "refs/loopr/have/"},
      loops::read_only_options());
  if (refs) {
    std::size_t start = 0, index = 0;
    while (start < refs->size()) {
      const auto end = refs->find('\n', start);
      const std::string ref =
          refs->substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (index++ >= 32 && !ref.empty()) (void)git->run({"update-ref", "-d", ref});
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return {};
}

Result<std::string> WorkerRepos::prepare(const std::string& key, const std::string& commit,
                                         unsigned slot, const FetchBundle& fetch) {
  std::lock_guard lock(lock_for(key));
  const std::string bare = state_ + "/repos/" + key + ".git";
  std::error_code ec;
  if (!fs::exists(bare + "/HEAD")) {
    fs::create_directories(bare, ec);
    auto git = GitCommand::bind(GitTarget{bare, ""});
    if (!git) return std::move(git).error();
    if (auto r = git->output({"init", "--bare", "--quiet", bare}); !r) {
      return std::move(r).error();
    }
  }
  if (auto held = ensure_commit(bare, commit, fetch); !held) return std::move(held).error();
  const std::string name = key + "-" + std::to_string(slot);
  const std::string path = state_ + "/work/" + name;
  const std::string admin = bare + "/worktrees/" + name;
  if (!fs::exists(admin + "/gitdir") || !fs::exists(path + "/.git")) {
    fs::remove_all(path, ec);
    auto git = GitCommand::bind(GitTarget{bare, ""});
    if (!git) return std::move(git).error();
    (void)git->run({"worktree", "prune"});
    if (auto r = git->output({"worktree", "add", "--detach", "--force", path, commit}); !r) {
      return std::move(r).error();
    }
  } else {
    auto git = GitCommand::bind(GitTarget{admin, path});
    if (!git) return std::move(git).error();
    if (auto r = git->output({"checkout", "--detach", "--force", "--quiet", commit}); !r) {
      return std::move(r).error();
    }
    if (auto r = git->output({"clean", "-fdq"}); !r) return std::move(r).error();
  }
  return fs::canonical(path, ec).string();
}

}  // namespace loopr::cluster
