#include "mcp/stdio_server.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>

#include "proto/line_codec.hpp"

namespace loopr::mcp {

using json = nlohmann::json;

namespace {

// Writes whole lines to one fd for every outbox of the session.
class LineWriter {
 public:
  explicit LineWriter(int fd) : fd_(fd) {}

  void write_line(const json& message) {
    std::string line = encode(message);
    line += '\n';
    std::lock_guard lock(mutex_);
    if (broken_) return;
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        broken_ = true;  // the client is gone: its reader will see EOF
        return;
      }
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
  std::mutex mutex_;
  bool broken_ = false;
};

class StdioOutbox final : public Outbox {
 public:
  explicit StdioOutbox(std::shared_ptr<LineWriter> writer) : writer_(std::move(writer)) {}
  void send(const json& message) override { writer_->write_line(message); }

 private:
  std::shared_ptr<LineWriter> writer_;
};

}  // namespace

int serve_stdio(McpSession& session, int in_fd, int out_fd) {
  auto writer = std::make_shared<LineWriter>(out_fd);
  auto outbox = std::make_shared<StdioOutbox>(writer);
  session.set_notification_outbox(outbox);
  proto::LineReader reader;
  std::string buffer(64 * 1024, '\0');
  int status = 0;
  while (true) {
    const ssize_t n = ::read(in_fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::perror("looprctl mcp: reading stdin");
      status = 1;
      break;
    }
    if (n == 0) break;
    reader.feed(std::string_view(buffer.data(), static_cast<std::size_t>(n)));
    bool fatal = false;
    while (true) {
      auto next = reader.next();
      if (!next) {
        if (reader.failed()) {
          writer->write_line(error_response(nullptr, rpc_code::invalid_request,
                                            "a message over 16 MiB: the session ends"));
          fatal = true;
        } else {
          writer->write_line(
              error_response(nullptr, rpc_code::parse_error, "not JSON: " + next.error().message));
          continue;
        }
        break;
      }
      if (!next->has_value()) break;
      session.handle(**next, outbox);
    }
    if (fatal) {
      status = 1;
      break;
    }
  }
  session.close();
  return status;
}

}  // namespace loopr::mcp
