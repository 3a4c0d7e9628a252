#include "loopr-tool/gitignore.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/unique_fd.hpp"
#include "common/worktree_path.hpp"

namespace loopr::tool {

GitignoreFile GitignoreFile::parse(std::string_view text) {
  GitignoreFile file;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    // Trailing spaces go unless the last one is escaped.
    while (!line.empty() && line.back() == ' ' &&
           !(line.size() >= 2 && line[line.size() - 2] == '\\')) {
      line.remove_suffix(1);
    }
    bool negated = false;
    if (line.front() == '!') {
      negated = true;
      line.remove_prefix(1);
    } else if (line.size() >= 2 && line[0] == '\\' && (line[1] == '!' || line[1] == '#')) {
      line.remove_prefix(1);
    }
    bool dir_only = false;
    if (!line.empty() && line.back() == '/') {
      dir_only = true;
      line.remove_suffix(1);
    }
    const bool basename_only = line.find('/') == std::string_view::npos;
    while (!line.empty() && line.front() == '/')
      line.remove_prefix(1);
    if (line.empty()) continue;
    auto pattern = GlobPattern::compile(line, /*alternation=*/false);
    if (!pattern) continue;
    file.rules_.push_back(Rule{std::move(*pattern), negated, dir_only, basename_only});
  }
  return file;
}

IgnoreVerdict GitignoreFile::match(std::string_view relative, bool is_dir) const {
  const std::size_t slash = relative.rfind('/');
  const std::string_view basename =
      slash == std::string_view::npos ? relative : relative.substr(slash + 1);
  for (auto rule = rules_.rbegin(); rule != rules_.rend(); ++rule) {
    if (rule->dir_only && !is_dir) continue;
    if (rule->pattern.match(rule->basename_only ? basename : relative)) {
      return rule->negated ? IgnoreVerdict::include : IgnoreVerdict::ignore;
    }
  }
  return IgnoreVerdict::none;
}

GitignoreFile read_gitignore(int dir_fd, const char* name) {
  UniqueFd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) return {};
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::string text;
  text.resize(std::min<std::size_t>(static_cast<std::size_t>(st.st_size), kMaxGitignoreBytes));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  text.resize(done);
  return GitignoreFile::parse(text);
}

IgnoreScope::Ptr IgnoreScope::empty() {
  static const Ptr none = std::make_shared<const IgnoreScope>(IgnoreScope{});
  return none;
}

IgnoreScope::Ptr IgnoreScope::for_root(int root_fd) {
  IgnoreScope scope;
  scope.base_ = ".";
  scope.rules_ = read_gitignore(root_fd, ".gitignore");
  UniqueFd git(::openat(root_fd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (git) {
    UniqueFd info(::openat(git.get(), "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (info) {
      GitignoreFile exclude = read_gitignore(info.get(), "exclude");
      if (!exclude.empty()) {
        scope.exclude_ = std::make_shared<const GitignoreFile>(std::move(exclude));
      }
    }
  }
  return std::make_shared<const IgnoreScope>(std::move(scope));
}

IgnoreScope::Ptr IgnoreScope::for_walk_of(int root_fd, std::string_view start) {
  Ptr scope = for_root(root_fd);
  const std::vector<std::string> parts = split_path(start);
  std::string relative = ".";
  UniqueFd dir(::openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (std::size_t i = 0; i + 1 < parts.size() && dir; ++i) {
    dir.reset(
        ::openat(dir.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) break;
    relative = relative == "." ? parts[i] : relative + "/" + parts[i];
    scope = child(scope, relative, read_gitignore(dir.get(), ".gitignore"));
  }
  return scope;
}

IgnoreScope::Ptr IgnoreScope::child(const Ptr& parent, std::string dir_relative,
                                    GitignoreFile rules) {
  if (rules.empty()) return parent;
  IgnoreScope scope;
  scope.parent_ = parent;
  scope.base_ = std::move(dir_relative);
  scope.rules_ = std::move(rules);
  scope.exclude_ = parent ? parent->exclude_ : nullptr;
  return std::make_shared<const IgnoreScope>(std::move(scope));
}

bool IgnoreScope::ignored(std::string_view relative, bool is_dir) const {
  for (const IgnoreScope* scope = this; scope != nullptr; scope = scope->parent_.get()) {
    if (scope->rules_.empty()) continue;
    std::string_view inside = relative;
    if (scope->base_ != ".") {
      if (relative.size() <= scope->base_.size() || relative[scope->base_.size()] != '/' ||
          relative.substr(0, scope->base_.size()) != scope->base_) {
        continue;
      }
      inside = relative.substr(scope->base_.size() + 1);
    }
    const IgnoreVerdict verdict = scope->rules_.match(inside, is_dir);
    if (verdict != IgnoreVerdict::none) return verdict == IgnoreVerdict::ignore;
  }
  if (exclude_) return exclude_->match(relative, is_dir) == IgnoreVerdict::ignore;
  return false;
}

}  // namespace loopr::tool
