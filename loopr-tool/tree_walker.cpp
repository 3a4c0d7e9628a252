#include "loopr-tool/tree_walker.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "loopr-tool/gitignore.hpp"

namespace loopr::tool {
namespace {

// Files of one directory handed out together; a directory with more files is
// split so that several workers can search it.
constexpr std::size_t kFileBatch = 128;
constexpr std::size_t kDentsBufferBytes = 64 * 1024;

struct linux_dirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

// An open directory shared by the queued items that live in it.
struct DirHandle {
  UniqueFd fd;
  std::atomic<std::size_t>* held;  // the walk's count of held handles
  DirHandle(UniqueFd owned, std::atomic<std::size_t>* counter)
      : fd(std::move(owned)), held(counter) {
    held->fetch_add(1, std::memory_order_relaxed);
  }
  ~DirHandle() { held->fetch_sub(1, std::memory_order_relaxed); }
  DirHandle(const DirHandle&) = delete;
  DirHandle& operator=(const DirHandle&) = delete;
};
using DirPtr = std::shared_ptr<DirHandle>;

struct Item {
  // A directory to read: `parent` + `name`, or (parent null) reopened by
  // `relative` from the root. A file batch: `parent` is the directory and
  // `files` the names in it.
  DirPtr parent;
  std::string name;
  std::string relative;  // the directory's path from the root
  int depth = 0;
  IgnoreScope::Ptr scope;
  std::vector<std::string> files;  // non-empty: a file batch
};

std::string join(std::string_view dir, std::string_view name) {
  if (dir == ".") return std::string(name);
  std::string path(dir.size() + 1 + name.size(), '/');
  dir.copy(path.data(), dir.size());
  name.copy(path.data() + dir.size() + 1, name.size());
  return path;
}

class Walk {
 public:
  Walk(const Worktree& worktree, const WalkOptions& options, const FileVisitor& visit,
       std::atomic<bool>* stop)
      : worktree_(worktree), options_(options), visit_(visit), external_stop_(stop) {}

  void push_initial(Item item) { queue_.push_back(std::move(item)); }

  void run() {
    const unsigned threads = std::clamp(options_.threads, 1u, kMaxWalkThreads);
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i)
      pool.emplace_back([this, i] { work(i); });
    work(0);
    for (std::thread& thread : pool)
      thread.join();
    if (failure_) std::rethrow_exception(failure_);
  }

  WalkStats stats() const {
    WalkStats s;
    s.files = files_.load();
    s.directories = directories_.load();
    s.skipped_symlinks = symlinks_.load();
    s.skipped_depth = deep_.load();
    s.unreadable = unreadable_.load();
    return s;
  }

 private:
  bool stopped() const {
    return halted_.load(std::memory_order_relaxed) ||
           (external_stop_ != nullptr && external_stop_->load(std::memory_order_relaxed));
  }

  void work(unsigned worker) {
    std::vector<char> dents(kDentsBufferBytes);
    std::string path;
    for (;;) {
      Item item;
      {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [&] { return !queue_.empty() || active_ == 0 || stopped(); });
        if (stopped() || queue_.empty()) {
          wake_.notify_all();
          return;
        }
        item = std::move(queue_.back());
        queue_.pop_back();
        ++active_;
      }
      try {
        if (item.files.empty()) {
          read_directory(std::move(item), dents, worker);
        } else {
          visit_batch(item.parent->fd.get(), item.relative, item.files, worker);
        }
      } catch (...) {
        std::lock_guard lock(mutex_);
        if (!failure_) failure_ = std::current_exception();
        halted_ = true;
      }
      {
        std::lock_guard lock(mutex_);
        --active_;
        if (active_ == 0 || stopped()) wake_.notify_all();
      }
    }
  }

  void push(std::vector<Item>& items) {
    if (items.empty()) return;
    {
      std::lock_guard lock(mutex_);
      for (Item& item : items)
        queue_.push_back(std::move(item));
    }
    if (items.size() == 1) {
      wake_.notify_one();
    } else {
      wake_.notify_all();
    }
    items.clear();
  }

  void visit_batch(int dir_fd, const std::string& dir, const std::vector<std::string>& names,
                   unsigned worker) {
    std::string path;
    for (const std::string& name : names) {
      if (stopped()) return;
      path = join(dir, name);
      files_.fetch_add(1, std::memory_order_relaxed);
      visit_(WalkEntry{dir_fd, name, path}, worker);
    }
  }

  UniqueFd open_directory(const Item& item) {
    if (item.parent) {
      return UniqueFd(::openat(item.parent->fd.get(), item.name.c_str(),
                               O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    }
    auto opened = worktree_.probe(item.relative, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    return opened ? std::move(*opened) : UniqueFd();
  }

  void read_directory(Item item, std::vector<char>& dents, unsigned worker) {
    UniqueFd fd = open_directory(item);
    if (!fd) {
      unreadable_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    directories_.fetch_add(1, std::memory_order_relaxed);
    IgnoreScope::Ptr scope = item.scope;
    if (options_.gitignore) {
      scope = IgnoreScope::child(scope, item.relative, read_gitignore(fd.get(), ".gitignore"));
    }
    std::vector<std::string> files;
    std::vector<std::string> subdirs;
    std::string path;
    for (;;) {
      const long n = ::syscall(SYS_getdents64, fd.get(), dents.data(), dents.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        unreadable_.fetch_add(1, std::memory_order_relaxed);
        break;
      }
      if (n == 0) break;
      for (long offset = 0; offset < n;) {
        const auto* entry = reinterpret_cast<const linux_dirent64*>(dents.data() + offset);
        offset += entry->d_reclen;
        const char* name = entry->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
        if (std::strcmp(name, ".git") == 0) continue;
        unsigned char type = entry->d_type;
        if (type == DT_UNKNOWN) {
          struct stat st {};
          if (::fstatat(fd.get(), name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
          type = S_ISDIR(st.st_mode)   ? DT_DIR
                 : S_ISREG(st.st_mode) ? DT_REG
                 : S_ISLNK(st.st_mode) ? DT_LNK
                                       : DT_UNKNOWN;
        }
        if (type == DT_LNK) {
          symlinks_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        if (type != DT_DIR && type != DT_REG) continue;
        path = join(item.relative, name);
        if (options_.gitignore && scope->ignored(path, type == DT_DIR)) continue;
        if (type == DT_DIR) {
          if (item.depth + 1 > options_.max_depth) {
            deep_.fetch_add(1, std::memory_order_relaxed);
          } else {
            subdirs.emplace_back(name);
          }
        } else {
          files.emplace_back(name);
        }
      }
    }

    const bool hold = held_.load(std::memory_order_relaxed) < kMaxHeldDirFds;
    DirPtr self = std::make_shared<DirHandle>(std::move(fd), &held_);
    std::vector<Item> queued;
    for (std::string& name : subdirs) {
      Item child;
      child.relative = join(item.relative, name);
      if (hold) child.parent = self;
      child.name = std::move(name);
      child.depth = item.depth + 1;
      child.scope = scope;
      queued.push_back(std::move(child));
    }
    // Extra batches of a large directory go to other workers; the first stays.
    std::size_t inline_count = files.size();
    if (hold && files.size() > kFileBatch) {
      inline_count = kFileBatch;
      for (std::size_t start = kFileBatch; start < files.size(); start += kFileBatch) {
        Item batch;
        batch.parent = self;
        batch.relative = item.relative;
        const std::size_t end = std::min(files.size(), start + kFileBatch);
        batch.files.assign(std::make_move_iterator(files.begin() + static_cast<long>(start)),
                           std::make_move_iterator(files.begin() + static_cast<long>(end)));
        queued.push_back(std::move(batch));
      }
      files.resize(inline_count);
    }
    push(queued);
    visit_batch(self->fd.get(), item.relative, files, worker);
  }

  const Worktree& worktree_;
  const WalkOptions& options_;
  const FileVisitor& visit_;
  std::atomic<bool>* external_stop_;

  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<Item> queue_;     // guarded by mutex_
  unsigned active_ = 0;         // guarded by mutex_: workers holding an item
  std::exception_ptr failure_;  // guarded by mutex_
  std::atomic<bool> halted_{false};
  std::atomic<std::size_t> held_{0};

  std::atomic<std::uint64_t> files_{0}, directories_{0}, symlinks_{0}, deep_{0}, unreadable_{0};
};

}  // namespace

unsigned default_walk_threads() {
  const unsigned cores = std::thread::hardware_concurrency();
  return std::clamp(cores, 1u, kMaxWalkThreads);
}

Result<WalkStats> walk_tree(const Worktree& worktree, std::string_view start,
                            const WalkOptions& options, const FileVisitor& visit,
                            std::atomic<bool>* stop) {
  auto opened = worktree.open(start, O_RDONLY | O_DIRECTORY);
  if (!opened) return std::move(opened).error();

  // Rules of the start directory's ancestors, root first.
  const IgnoreScope::Ptr scope = options.gitignore
                                     ? IgnoreScope::for_walk_of(worktree.root_fd(), start)
                                     : IgnoreScope::empty();
  // The start directory is read by a worker through its parent-less item;
  // its fd from openat2 proves it exists beneath the root.
  std::atomic<std::size_t> unused{0};
  Walk walk(worktree, options, visit, stop);
  Item root;
  root.relative = std::string(start);
  root.parent = std::make_shared<DirHandle>(std::move(*opened), &unused);
  root.name.assign(1, '.');
  root.scope = scope;
  walk.push_initial(std::move(root));
  walk.run();
  return walk.stats();
}

}  // namespace loopr::tool
