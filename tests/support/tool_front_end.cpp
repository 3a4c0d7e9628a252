#include "tests/support/tool_front_end.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "loopr-tool/tool_registry.hpp"
#include "tests/support/temp_tree.hpp"

extern char** environ;

namespace loopr::test {
namespace {

using Json = nlohmann::json;

// A reply slower than this is a hung worker: the test fails instead of
// waiting for CTest's timeout.
constexpr int kReplyTimeoutMs = 120'000;

// The tools whose calls change nothing: in worker mode their calls are
// repeated through `process` and must give the same bytes.
bool read_only(std::string_view tool) {
  return tool == "read_file" || tool == "list_directory" || tool == "glob" || tool == "grep";
}

std::string shortened(std::string_view text) {
  constexpr std::size_t kShown = 600;
  if (text.size() <= kShown) return std::string(text);
  return std::string(text.substr(0, kShown)) + "... (" + std::to_string(text.size()) + " bytes)";
}

Error broken(const std::string& what, const tool::ToolOutput& output) {
  ADD_FAILURE() << "loopr-tool front end: " << what << " (exit " << output.exit_code
                << ", stdout: " << shortened(output.stdout_text) << ")";
  return make_error(errc::protocol, what);
}

}  // namespace

FrontEnd front_end_from_env() {
  const char* value = std::getenv("LOOPR_TOOL_FRONT_END");
  const std::string_view name = value == nullptr ? "" : value;
  if (name.empty() || name == "inline") return FrontEnd::inline_call;
  if (name == "process") return FrontEnd::process;
  if (name == "worker") return FrontEnd::worker;
  throw std::invalid_argument("LOOPR_TOOL_FRONT_END must be inline, process or worker, not '" +
                              std::string(name) + "'");
}

std::string_view front_end_name(FrontEnd front_end) {
  switch (front_end) {
    case FrontEnd::inline_call:
      return "inline";
    case FrontEnd::process:
      return "process";
    case FrontEnd::worker:
      return "worker";
  }
  return "?";
}

WorkerProcess::WorkerProcess(const std::string& worktree, int filter_fd) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
  }
  // A copy above the fds the child gets, so dup2 onto 3 never meets itself
  // (dup2 clears O_CLOEXEC only on a different descriptor).
  int filter_copy = -1;
  if (filter_fd >= 0) {
    filter_copy = ::fcntl(filter_fd, F_DUPFD_CLOEXEC, 10);
    if (filter_copy < 0) throw std::runtime_error("cannot duplicate the filter fd");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 0);
  posix_spawn_file_actions_adddup2(&actions, pair[1], 1);
  if (filter_copy >= 0) posix_spawn_file_actions_adddup2(&actions, filter_copy, 3);
  const std::string binary = bin_path("loopr-tool");
  std::string serve = "--serve", worktree_flag = "--worktree", root = worktree;
  std::string filter_flag = "--filter-fd", filter_number = "3";
  std::vector<char*> argv = {const_cast<char*>(binary.c_str()), serve.data(), worktree_flag.data(),
                             root.data()};
  if (filter_copy >= 0) {
    argv.push_back(filter_flag.data());
    argv.push_back(filter_number.data());
  }
  argv.push_back(nullptr);
  const int rc = ::posix_spawn(&pid_, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pair[1]);
  if (filter_copy >= 0) ::close(filter_copy);
  if (rc != 0) {
    ::close(pair[0]);
    throw std::runtime_error("cannot spawn " + binary + ": " + std::strerror(rc));
  }
  fd_ = pair[0];
}

WorkerProcess::~WorkerProcess() {
  // Closing the link is EOF for a worker waiting for a call, and EPIPE for
  // one still writing: either way it ends.
  if (fd_ >= 0) ::close(fd_);
  if (pid_ > 0 && wait_status_ < 0) {
    while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
    }
  }
}

Error WorkerProcess::link_error(std::string message) {
  return make_error(errc::protocol, "warm worker " + std::to_string(pid_) + ": " + message);
}

Result<std::string> WorkerProcess::next_payload() {
  char buffer[65536];
  for (;;) {
    auto payload = reader_.next_payload();
    if (!payload) return payload.error();
    if (*payload) return std::move(**payload);
    pollfd pfd{fd_, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, kReplyTimeoutMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) return link_error("no reply within the timeout");
    const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return link_error(std::string("recv: ") + std::strerror(errno));
    if (n == 0) return link_error("closed the link");
    reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
  }
}

Result<proto::WorkerReady> WorkerProcess::ready() {
  if (ready_) return *ready_;
  auto payload = next_payload();
  if (!payload) return payload.error();
  auto message = proto::parse_worker_payload(*payload);
  if (!message) return message.error();
  const auto* ready = std::get_if<proto::WorkerReady>(&*message);
  if (ready == nullptr) return link_error("the first message is not \"ready\"");
  ready_ = *ready;
  return *ready_;
}

Result<tool::ToolOutput> WorkerProcess::call(std::string_view tool, std::string_view args_json) {
  if (auto ready_message = ready(); !ready_message) return ready_message.error();
  auto frame =
      proto::encode_worker_frame(proto::WorkerCall{std::string(tool), std::string(args_json)});
  if (!frame) return frame.error();
  std::size_t done = 0;
  while (done < frame->size()) {
    const ssize_t n = ::send(fd_, frame->data() + done, frame->size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return link_error(std::string("send: ") + std::strerror(errno));
    done += static_cast<std::size_t>(n);
  }
  auto payload = next_payload();
  if (!payload) return payload.error();
  auto message = proto::parse_worker_payload(*payload);
  if (!message) return message.error();
  const auto* reply = std::get_if<proto::WorkerReply>(&*message);
  if (reply == nullptr) return link_error("answered a call with something else than a reply");
  return tool::ToolOutput{reply->exit_code, reply->stdout_text};
}

int WorkerProcess::finish() {
  if (wait_status_ >= 0) return wait_status_;
  ::shutdown(fd_, SHUT_WR);
  while (::waitpid(pid_, &wait_status_, 0) < 0 && errno == EINTR) {
  }
  return wait_status_;
}

Result<Json> tool_result_from_output(const tool::ToolOutput& output) {
  const std::string& text = output.stdout_text;
  if (text.empty() || text.back() != '\n' || std::count(text.begin(), text.end(), '\n') != 1) {
    return broken("stdout is not one line", output);
  }
  Json parsed = Json::parse(text, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return broken("stdout is not one JSON object", output);
  }
  if (output.exit_code == 0) return parsed;
  if (output.exit_code != 1 && output.exit_code != 2) {
    return broken("unexpected exit status", output);
  }
  const auto error = parsed.find("error");
  if (parsed.size() != 1 || error == parsed.end() || !error->is_object()) {
    return broken("a failure without one {\"error\": {...}} object", output);
  }
  const auto code = error->find("code");
  const auto message = error->find("message");
  const auto hint = error->find("hint");
  if (code == error->end() || !code->is_string() || message == error->end() ||
      !message->is_string() || (hint != error->end() && !hint->is_string())) {
    return broken("an error object without a string code and message", output);
  }
  Error result = make_error(code->get<std::string>(), message->get<std::string>(),
                            hint == error->end() ? std::string() : hint->get<std::string>());
  if (const auto details = error->find("details"); details != error->end()) {
    result.details = *details;
  }
  return result;
}

ToolFrontEnd::ToolFrontEnd(std::string worktree, FrontEnd front_end)
    : root_(std::move(worktree)), front_end_(front_end) {}

ToolFrontEnd::~ToolFrontEnd() = default;

Result<Json> ToolFrontEnd::call(tool::ToolFunction tool, const Json& args) {
  for (const tool::ToolEntry& entry : tool::all_tools()) {
    if (entry.run == tool) return call(entry.name, args);
  }
  throw std::invalid_argument("a tool function that is not in loopr-tool's registry");
}

Result<Json> ToolFrontEnd::call(std::string_view tool_name, const Json& args) {
  switch (front_end_) {
    case FrontEnd::inline_call: {
      if (!worktree_) {
        auto opened = tool::Worktree::open(root_);
        if (!opened) return opened.error();
        worktree_ = std::make_unique<tool::Worktree>(std::move(*opened));
      }
      const tool::ToolEntry* entry = tool::find_tool(tool_name);
      if (entry == nullptr) {
        return make_error(errc::invalid_arguments, "unknown tool '" + std::string(tool_name) + "'");
      }
      return entry->run(*worktree_, args);
    }
    case FrontEnd::process: {
      const ToolRun run = run_loopr_tool(tool_name, root_, args);
      return tool_result_from_output({run.exit_code, run.stdout_text});
    }
    case FrontEnd::worker: {
      const std::string args_json = args.dump();
      const tool::ToolOutput output = through_worker(tool_name, args_json);
      if (read_only(tool_name)) {
        const ToolRun run = run_loopr_tool(tool_name, root_, std::string_view(args_json));
        EXPECT_EQ(output.exit_code, run.exit_code)
            << tool_name << " " << shortened(args_json) << ": worker and process exit statuses";
        EXPECT_TRUE(output.stdout_text == run.stdout_text)
            << tool_name << " " << shortened(args_json)
            << ": worker and process stdout differ\n worker:  " << shortened(output.stdout_text)
            << "\n process: " << shortened(run.stdout_text);
      }
      return tool_result_from_output(output);
    }
  }
  throw std::logic_error("unknown front end");
}

tool::ToolOutput ToolFrontEnd::through_worker(std::string_view tool_name,
                                              const std::string& args_json) {
  if (!worker_) worker_ = std::make_unique<WorkerProcess>(root_);
  auto output = worker_->call(tool_name, args_json);
  if (!output) {
    ADD_FAILURE() << "warm worker: " << output.error().message;
    // The link is unusable now; the next call starts a new worker.
    worker_.reset();
    return {1, Json{{"error", output.error().to_json()}}.dump() + "\n"};
  }
  return std::move(*output);
}

}  // namespace loopr::test
