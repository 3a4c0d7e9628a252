#include "loopr-tool/serve.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "common/output_capture.hpp"
#include "proto/worker_messages.hpp"

namespace loopr::tool {
namespace {

constexpr int kExitFilterFailed = 3;
constexpr int kExitLinkFailed = 4;
// After a call whose arguments or reply were this large, or that walked a
// tree (on several threads, each with a malloc arena of its own), give the
// memory back: a worker lives long, and one big write_file or grep should
// not pin what it needed (measured: 5 MB resident after reads, 15 MB after
// greps and 22 MB after an 8 MiB write_file without this).
constexpr std::size_t kTrimAfterBytes = 256u << 10;

bool walks_a_tree(std::string_view tool) {
  return tool == "grep" || tool == "glob" || tool == "list_directory";
}

// Reads the BPF program on `fd` (an array of sock_filter, as the runner
// exported it) and installs it on this process.
bool install_filter(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0 ||
      st.st_size % static_cast<off_t>(sizeof(sock_filter)) != 0 ||
      st.st_size > static_cast<off_t>(BPF_MAXINSNS * sizeof(sock_filter))) {
    std::cerr << "loopr-tool --serve: the filter on fd " << fd << " is not a BPF program\n";
    return false;
  }
  std::vector<sock_filter> program(static_cast<std::size_t>(st.st_size) / sizeof(sock_filter));
  if (::pread(fd, program.data(), static_cast<std::size_t>(st.st_size), 0) != st.st_size) {
    std::cerr << "loopr-tool --serve: cannot read the filter: " << std::strerror(errno) << "\n";
    return false;
  }
  ::close(fd);
  sock_fprog fprog{};
  fprog.len = static_cast<unsigned short>(program.size());
  fprog.filter = program.data();
  // Already set inside a runner; needed to stack a filter without CAP_SYS_ADMIN.
  ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  if (::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    std::cerr << "loopr-tool --serve: cannot install the filter: " << std::strerror(errno) << "\n";
    return false;
  }
  return true;
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool send(const proto::WorkerMessage& message) {
  auto frame = proto::encode_worker_frame(message);
  if (!frame) {
    std::cerr << "loopr-tool --serve: cannot encode a reply: " << frame.error().message << "\n";
    return false;
  }
  return write_all(STDOUT_FILENO, *frame);
}

}  // namespace

int serve_calls(std::string_view program, std::span<const ToolEntry> tools,
                const Worktree& worktree, int filter_fd) {
  // One malloc arena for every thread (grep's walkers too), so that what a
  // call freed can be given back by malloc_trim below: memory in a thread's
  // own arena outlived the thread.
  ::mallopt(M_ARENA_MAX, 1);
  const bool filtered = filter_fd >= 0;
  if (filtered && !install_filter(filter_fd)) return kExitFilterFailed;
  if (!send(proto::WorkerReady{filtered})) return kExitLinkFailed;

  proto::FrameReader reader(proto::kMaxWorkerPayload);
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    for (;;) {
      bool trim = false;
      {
        auto payload = reader.next_payload();
        if (!payload) {
          std::cerr << "loopr-tool --serve: " << payload.error().message << "\n";
          return kExitLinkFailed;
        }
        if (!*payload) break;
        auto message = proto::parse_worker_payload(**payload);
        const auto* call = message ? std::get_if<proto::WorkerCall>(&*message) : nullptr;
        if (call == nullptr) {
          std::cerr << "loopr-tool --serve: expected a call: "
                    << (message ? "another message" : message.error().message) << "\n";
          return kExitLinkFailed;
        }
        ToolOutput output = call_tool(program, tools, call->tool, worktree, call->args_json,
                                      static_cast<std::size_t>(call->max_output_bytes));
        trim = call->args_json.size() + output.stdout_text.size() > kTrimAfterBytes ||
               walks_a_tree(call->tool);
        proto::WorkerReply reply{output.exit_code, std::move(output.stdout_text), false};
        if (call->max_output_bytes > 0) {
          // As the runner holds a process job's stdout, so the bytes match.
          OutputCapture capture(call->max_output_bytes);
          capture.append(reply.stdout_text);
          if (capture.truncated()) {
            reply.stdout_text = capture.contents();
            reply.truncated = true;
          }
        }
        if (!send(reply)) return kExitLinkFailed;
      }
      // The call's buffers are freed by now.
      if (trim) ::malloc_trim(0);
    }
    const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return kExitLinkFailed;
    reader.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
  }
}

}  // namespace loopr::tool
