// loopr-attack-probe ATTACK: tries one attack from SECURITY.md with a real
// system call and prints one line "ATTACK: <outcome>", where outcome is
// "allowed" or "errno <NAME>" (or an observation, for the read-only checks).
// The attack tests copy it into a job's worktree and run it inside the lane
// sandbox through run_command, then assert on that line.
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/keyctl.h>
#include <linux/openat2.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

namespace {

int report(const char* name, long rc) {
  if (rc >= 0) {
    std::printf("%s: allowed\n", name);
  } else {
    std::printf("%s: errno %s\n", name, strerrorname_np(errno));
  }
  return 0;
}

pid_t sleeping_child() {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  return pid;
}

void end_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

int try_socket(const char* name, int family, int type) {
  const int fd = ::socket(family, type, 0);
  report(name, fd);
  if (fd >= 0) ::close(fd);
  return 0;
}

const std::map<std::string, std::function<int(const char*)>>& attacks() {
  static const std::map<std::string, std::function<int(const char*)>> table = {
      {"ptrace_attach",
       [](const char* n) {
         const pid_t child = sleeping_child();
         report(n, ::ptrace(PTRACE_ATTACH, child, nullptr, nullptr));
         end_child(child);
         return 0;
       }},
      {"process_vm_writev",
       [](const char* n) {
         const pid_t child = sleeping_child();
         char byte = 0;
         iovec local{&byte, 1};
         iovec remote{&byte, 1};
         report(n, ::process_vm_writev(child, &local, 1, &remote, 1, 0));
         end_child(child);
         return 0;
       }},
      {"proc_1_mem_write", [](const char* n) { return report(n, ::open("/proc/1/mem", O_RDWR)); }},
      {"io_uring_setup",
       [](const char* n) {
         char params[120] = {};
         return report(n, ::syscall(SYS_io_uring_setup, 1, params));
       }},
      {"tiocsti",
       [](const char* n) {
         char c = 'x';
         return report(n, ::ioctl(0, TIOCSTI, &c));
       }},
      {"tiocsti_high_bits",
       [](const char* n) {
         char c = 'x';
         return report(n, ::syscall(SYS_ioctl, 0, (1ul << 32) | TIOCSTI, &c));
       }},
      {"tioclinux",
       [](const char* n) {
         char c = 0;
         return report(n, ::ioctl(0, TIOCLINUX, &c));
       }},
      {"keyctl",
       [](const char* n) {
         return report(n,
                       ::syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
       }},
      {"add_key",
       [](const char* n) {
         return report(n,
                       ::syscall(SYS_add_key, "user", "loopr", "x", 1, KEY_SPEC_SESSION_KEYRING));
       }},
      {"bpf",
       [](const char* n) {
         union bpf_attr attr {};
         attr.map_type = BPF_MAP_TYPE_ARRAY;
         attr.key_size = 4;
         attr.value_size = 4;
         attr.max_entries = 1;
         return report(n, ::syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
       }},
      {"userfaultfd", [](const char* n) { return report(n, ::syscall(SYS_userfaultfd, 0)); }},
      {"perf_event_open",
       [](const char* n) {
         perf_event_attr attr{};
         attr.size = sizeof attr;
         attr.type = PERF_TYPE_SOFTWARE;
         attr.config = PERF_COUNT_SW_CPU_CLOCK;
         return report(n, ::syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
       }},
      {"mount",
       [](const char* n) { return report(n, ::mount("tmpfs", "/tmp", "tmpfs", 0, nullptr)); }},
      {"umount2", [](const char* n) { return report(n, ::umount2("/proc", MNT_DETACH)); }},
      {"pivot_root",
       [](const char* n) { return report(n, ::syscall(SYS_pivot_root, "/tmp", "/tmp")); }},
      {"setns",
       [](const char* n) {
         const int fd = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
         return report(n, fd < 0 ? fd : ::setns(fd, 0));
       }},
      {"unshare_user", [](const char* n) { return report(n, ::unshare(CLONE_NEWUSER)); }},
      {"clone_newns",
       [](const char* n) {
         const long pid = ::syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, nullptr, nullptr, nullptr, 0);
         if (pid == 0) ::_exit(0);
         if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
         return report(n, pid);
       }},
      {"clone3_newuser",
       [](const char* n) {
         clone_args args{};
         args.flags = CLONE_NEWUSER;
         args.exit_signal = SIGCHLD;
         const long pid = ::syscall(SYS_clone3, &args, sizeof args);
         if (pid == 0) ::_exit(0);
         if (pid > 0) ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
         return report(n, pid);
       }},
      {"open_by_handle_at",
       [](const char* n) {
         char buffer[sizeof(file_handle) + 128] = {};
         auto* handle = reinterpret_cast<file_handle*>(buffer);
         handle->handle_bytes = 8;
         return report(n, ::syscall(SYS_open_by_handle_at, AT_FDCWD, handle, O_RDONLY));
       }},
      {"socket_inet", [](const char* n) { return try_socket(n, AF_INET, SOCK_STREAM); }},
      {"socket_inet6", [](const char* n) { return try_socket(n, AF_INET6, SOCK_DGRAM); }},
      {"socket_packet", [](const char* n) { return try_socket(n, AF_PACKET, SOCK_RAW); }},
      {"socket_netlink", [](const char* n) { return try_socket(n, AF_NETLINK, SOCK_RAW); }},
      {"socket_vsock", [](const char* n) { return try_socket(n, AF_VSOCK, SOCK_STREAM); }},
      {"socket_unix", [](const char* n) { return try_socket(n, AF_UNIX, SOCK_STREAM); }},
      {"open_fds",
       [](const char* n) {
         std::string open;
         for (int fd = 0; fd < 1024; ++fd) {
           if (::fcntl(fd, F_GETFD) >= 0) open += (open.empty() ? "" : ",") + std::to_string(fd);
         }
         std::printf("%s: %s\n", n, open.c_str());
         return 0;
       }},
  };
  return table;
}

// connect_abstract NAME: connects to the abstract Unix socket "\0NAME".
int connect_abstract(const char* name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return report("connect_abstract", fd);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path + 1, name, sizeof address.sun_path - 2);
  const auto length =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + std::strlen(name));
  return report("connect_abstract", ::connect(fd, reinterpret_cast<sockaddr*>(&address), length));
}

// connect_path PATH: connects to a Unix socket by path.
int connect_path(const char* path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return report("connect_path", fd);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path, sizeof address.sun_path - 1);
  return report("connect_path",
                ::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address));
}

// Attacks on one path or id (classes 23, 24): open_read PATH, stat PATH,
// chown PATH UID, setresuid UID.
int path_attack(const std::string& attack, const char* argument, const char* id) {
  if (attack == "open_read") return report("open_read", ::open(argument, O_RDONLY | O_CLOEXEC));
  if (attack == "stat") {
    struct stat st {};
    return report("stat", ::stat(argument, &st));
  }
  const auto number = static_cast<unsigned>(std::strtoul(id ? id : argument, nullptr, 10));
  if (attack == "chown") return report("chown", ::chown(argument, number, number));
  return report("setresuid", ::setresuid(number, number, number));
}

}  // namespace

// create_setid PATH: creates PATH with mode 04755 through openat2, whose
// mode seccomp cannot see (class 24; the runner's sweep must clear it).
int create_setid(const char* path) {
  open_how how{};
  how.flags = O_CREAT | O_WRONLY | O_CLOEXEC;
  how.mode = 04755;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
  if (fd >= 0) ::fchmod(static_cast<int>(fd), 04755);  // refused by seccomp as root; fine
  return report("create_setid", fd < 0 ? -1 : 0);
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "create_setid") return create_setid(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "connect_abstract") return connect_abstract(argv[2]);
  if (argc == 3 && std::string(argv[1]) == "connect_path") return connect_path(argv[2]);
  for (const char* attack : {"open_read", "stat", "setresuid"}) {
    if (argc == 3 && argv[1] == std::string(attack)) return path_attack(attack, argv[2], nullptr);
  }
  if (argc == 4 && std::string(argv[1]) == "chown") return path_attack("chown", argv[2], argv[3]);
  if (argc != 2 || !attacks().count(argv[1])) {
    std::fprintf(stderr, "usage: loopr-attack-probe ATTACK\nattacks:");
    for (const auto& [name, _] : attacks())
      std::fprintf(stderr, " %s", name.c_str());
    std::fprintf(stderr,
                 " connect_abstract NAME, connect_path PATH, open_read PATH, stat PATH, "
                 "chown PATH UID, setresuid UID\n");
    return 2;
  }
  return attacks().at(argv[1])(argv[1]);
}
