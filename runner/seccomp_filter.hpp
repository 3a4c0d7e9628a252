// The job's seccomp filter (libseccomp), DESIGN.md §7.4: default allow with a
// deny list. Compiled to BPF once per lane (compiling costs ~0.3 ms, loading
// the ready program costs microseconds) and installed per job as the last
// step before exec, after no_new_privs.
//
// Denied with EPERM, so tools can say what the sandbox refused: ptrace,
// process_vm_*, io_uring_*, bpf, userfaultfd, perf_event_open, the keyctl
// family, the mount family, setns, unshare, clone with namespace flags,
// open_by_handle_at, kexec, module loading, and the TIOCSTI / TIOCLINUX
// ioctls (compared on the low 32 bits, so high bits set in the request cannot
// slip past). clone3 gets ENOSYS (its flags live in memory seccomp cannot
// read; libc falls back to clone). Non-native architectures kill the process.
// A lane without network also gets EPERM for socket() of any family but
// AF_UNIX. Argument checks stay on few syscalls so the kernel's
// constant-action bitmap covers all the rest.
#pragma once

#include <linux/filter.h>

#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace loopr::runner {

class SeccompProgram {
 public:
  // deny_network: no socket but AF_UNIX (the no-net lane). deny_set_id_bits:
  // no S_ISUID/S_ISGID through the chmod family, open, openat, creat, mknod
  // (looprd as root, SECURITY class 24).
  static Result<SeccompProgram> compile(bool deny_network, bool deny_set_id_bits);

  // The warm worker's second filter, stacked on the lane's (the kernel runs
  // both; the stricter action wins): no execve or execveat, and no new
  // process — fork, vfork, and clone without CLONE_THREAD get EPERM (threads
  // stay allowed: grep walks a tree on several); clone3 is already ENOSYS.
  static Result<SeccompProgram> compile_no_new_processes();

  // The program in a sealed memfd (no write, grow or shrink), to hand to a
  // process that installs it itself after exec (loopr-tool --serve).
  Result<UniqueFd> sealed_copy() const;

  // Installs the filter on the calling thread (inherited across fork and
  // exec). Needs no_new_privs set first. Called in a job child forked from
  // the single-threaded runner, where allocating is safe.
  Result<void> install() const;

  std::size_t instruction_count() const { return instructions_.size(); }

 private:
  static Result<SeccompProgram> export_program(void* ctx);

  std::vector<sock_filter> instructions_;
};

}  // namespace loopr::runner
