#include "runner/seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <memory>

#include "common/unique_fd.hpp"
#include "runner/sandbox_step.hpp"

namespace loopr::runner {
namespace {

constexpr const char* kSeccompStep = "seccomp";

struct ContextDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

constexpr const char* kDeniedSyscalls[] = {"ptrace",
                                           "process_vm_readv",
                                           "process_vm_writev",
                                           "io_uring_setup",
                                           "io_uring_enter",
                                           "io_uring_register",
                                           "bpf",
                                           "userfaultfd",
                                           "perf_event_open",
                                           "keyctl",
                                           "add_key",
                                           "request_key",
                                           "mount",
                                           "umount2",
                                           "pivot_root",
                                           "chroot",
                                           "move_mount",
                                           "open_tree",
                                           "fsopen",
                                           "fsconfig",
                                           "fsmount",
                                           "fspick",
                                           "mount_setattr",
                                           "setns",
                                           "unshare",
                                           "open_by_handle_at",
                                           "name_to_handle_at",
                                           "kexec_load",
                                           "kexec_file_load",
                                           "init_module",
                                           "finit_module",
                                           "delete_module",
                                           "acct",
                                           "swapon",
                                           "swapoff",
                                           "reboot",
                                           "syslog",
                                           "quotactl",
                                           "iopl",
                                           "ioperm",
                                           "lookup_dcookie",
                                           "vhangup",
                                           "fanotify_init"};

constexpr unsigned long kNamespaceFlags[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWCGROUP};

Result<void> add(scmp_filter_ctx ctx, std::uint32_t action, const char* name,
                 std::initializer_list<scmp_arg_cmp> args = {}) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return {};  // not a syscall on this architecture
  const int rc = seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(args.size()),
                                        args.size() ? args.begin() : nullptr);
  if (rc != 0) return step_failed(kSeccompStep, std::string("add a rule for ") + name, -rc);
  return {};
}

}  // namespace

Result<SeccompProgram> SeccompProgram::compile(bool deny_network, bool deny_set_id_bits) {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return step_failed(kSeccompStep, "seccomp_init");
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) {
    return step_failed(kSeccompStep, "set the bad-architecture action");
  }
  const std::uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : kDeniedSyscalls) {
    if (auto r = add(ctx.get(), deny, name); !r) return std::move(r).error();
  }
  if (auto r = add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3"); !r) return std::move(r).error();
  for (unsigned long flag : kNamespaceFlags) {
    if (auto r = add(ctx.get(), deny, "clone", {SCMP_A0_64(SCMP_CMP_MASKED_EQ, flag, flag)}); !r) {
      return std::move(r).error();
    }
  }
  for (unsigned long request :
       {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
    if (auto r =
            add(ctx.get(), deny, "ioctl", {SCMP_A1_64(SCMP_CMP_MASKED_EQ, 0xFFFFFFFFul, request)});
        !r) {
      return std::move(r).error();
    }
  }
  // As root, no set-user-ID or set-group-ID bit on anything a job makes: a
  // job's files are root's on disk (an idmapped worktree), and a setuid-root
  // program left in a worktree would hand root to whoever runs it on the
  // host. The chmod family and the creating calls whose mode is a plain
  // argument are refused; openat2 (its mode is inside a struct, and
  // loopr-tool needs it) is covered by the runner's sweep after command
  // jobs (set_id_sweep.hpp). Only as root: argument checks on open and
  // openat cost every job's hottest calls the kernel's action cache.
  if (deny_set_id_bits) {
    const struct {
      const char* name;
      unsigned mode_arg;
    } mode_setters[] = {{"chmod", 1},     {"fchmod", 1}, {"fchmodat", 2},
                        {"fchmodat2", 2}, {"creat", 1},  {"open", 2},
                        {"openat", 3},    {"mknod", 1},  {"mknodat", 2}};
    for (const auto& setter : mode_setters) {
      for (const scmp_datum_t bit : {scmp_datum_t{S_ISUID}, scmp_datum_t{S_ISGID}}) {
        if (auto r = add(ctx.get(), deny, setter.name,
                         {scmp_arg_cmp{setter.mode_arg, SCMP_CMP_MASKED_EQ, bit, bit}});
            !r) {
          return std::move(r).error();
        }
      }
    }
  }
  if (deny_network) {
    if (auto r = add(ctx.get(), deny, "socket", {SCMP_A0_32(SCMP_CMP_NE, AF_UNIX)}); !r) {
      return std::move(r).error();
    }
  }

  return export_program(ctx.get());
}

Result<SeccompProgram> SeccompProgram::compile_no_new_processes() {
  Context ctx(seccomp_init(SCMP_ACT_ALLOW));
  if (!ctx) return step_failed(kSeccompStep, "seccomp_init");
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) != 0) {
    return step_failed(kSeccompStep, "set the bad-architecture action");
  }
  const std::uint32_t deny = SCMP_ACT_ERRNO(EPERM);
  for (const char* name : {"execve", "execveat", "fork", "vfork"}) {
    if (auto r = add(ctx.get(), deny, name); !r) return std::move(r).error();
  }
  if (auto r = add(ctx.get(), deny, "clone", {SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0)});
      !r) {
    return std::move(r).error();
  }
  if (auto r = add(ctx.get(), SCMP_ACT_ERRNO(ENOSYS), "clone3"); !r) return std::move(r).error();
  return export_program(ctx.get());
}

Result<SeccompProgram> SeccompProgram::export_program(void* ctx) {
  // Export the BPF once; jobs load it with one seccomp() call.
  UniqueFd memory(::memfd_create("loopr-seccomp", MFD_CLOEXEC));
  if (!memory) return step_failed(kSeccompStep, "memfd_create", errno);
  if (const int rc = seccomp_export_bpf(ctx, memory.get()); rc != 0) {
    return step_failed(kSeccompStep, "export the filter", -rc);
  }
  const off_t size = ::lseek(memory.get(), 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    return step_failed(kSeccompStep, "exported filter has an unexpected size");
  }
  SeccompProgram program;
  program.instructions_.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
  if (::pread(memory.get(), program.instructions_.data(), static_cast<std::size_t>(size), 0) !=
      size) {
    return step_failed(kSeccompStep, "read the exported filter", errno);
  }
  return program;
}

Result<UniqueFd> SeccompProgram::sealed_copy() const {
  UniqueFd memory(::memfd_create("loopr-worker-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!memory) return step_failed(kSeccompStep, "memfd_create", errno);
  const std::size_t bytes = instructions_.size() * sizeof(sock_filter);
  if (::write(memory.get(), instructions_.data(), bytes) != static_cast<ssize_t>(bytes)) {
    return step_failed(kSeccompStep, "write the filter to a memfd", errno);
  }
  if (::fcntl(memory.get(), F_ADD_SEALS,
              F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) {
    return step_failed(kSeccompStep, "seal the filter's memfd", errno);
  }
  return memory;
}

Result<void> SeccompProgram::install() const {
  sock_fprog program{};
  program.len = static_cast<unsigned short>(instructions_.size());
  program.filter = const_cast<sock_filter*>(instructions_.data());
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) {
    return step_failed(kSeccompStep, "install the filter", errno);
  }
  return {};
}

}  // namespace loopr::runner
