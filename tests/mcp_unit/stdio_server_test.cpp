// serve_stdio (mcp/stdio_server.hpp) over pipes: one JSON-RPC message per
// line each way, a line that is not JSON answered with a parse error, and
// end of file closing the session.
#include "mcp/stdio_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"
#include "proto/line_codec.hpp"
#include "tests/mcp_unit/fake_daemon_link.hpp"

namespace loopr::mcp::test {
namespace {

using nlohmann::json;

class Stdio : public ::testing::Test {
 protected:
  void SetUp() override {
    int in[2];
    int out[2];
    ASSERT_EQ(::pipe2(in, O_CLOEXEC), 0);
    ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
    server_in_ = UniqueFd(in[0]);
    client_out_ = UniqueFd(in[1]);
    client_in_ = UniqueFd(out[0]);
    server_out_ = UniqueFd(out[1]);
    SessionOptions options;
    options.worktree = "/srv/repo";
    session_ = std::make_unique<McpSession>(link_, options);
    served_ = std::async(std::launch::async, [this] {
      return serve_stdio(*session_, server_in_.get(), server_out_.get());
    });
  }
  void TearDown() override {
    client_out_.reset();  // end of file, if the test has not sent it
    if (served_.valid()) served_.get();
  }

  void write_line(const std::string& line) {
    const std::string bytes = line + "\n";
    ASSERT_EQ(::write(client_out_.get(), bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }
  // The next line the server wrote, parsed (bounded by the pipe: the server
  // answers or the test's own end of file ends it).
  json read_message() {
    while (true) {
      auto next = reader_.next();
      if (!next) return json("(not JSON: " + next.error().message + ")");
      if (next->has_value()) return **next;
      char buffer[4096];
      const ssize_t n = ::read(client_in_.get(), buffer, sizeof buffer);
      if (n <= 0) return json("(end of output)");
      reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    }
  }

  FakeDaemonLink link_;
  std::unique_ptr<McpSession> session_;
  UniqueFd server_in_, client_out_, client_in_, server_out_;
  std::future<int> served_;
  proto::LineReader reader_;
};

TEST_F(Stdio, ALineThatIsNotJsonGetsAParseErrorAndTheSessionGoesOn) {
  // Both lines, then end of file: the answers come in order and the reads
  // below end at the server's end of output.
  write_line("this is { not json");
  write_line(R"({"jsonrpc":"2.0","id":1,"method":"ping"})");
  client_out_.reset();
  ASSERT_EQ(served_.get(), 0);
  server_out_.reset();
  json error = read_message();
  EXPECT_EQ(error["jsonrpc"], "2.0");
  EXPECT_TRUE(error.contains("id"));
  EXPECT_TRUE(error["id"].is_null());
  EXPECT_EQ(error["error"]["code"], rpc_code::parse_error);
  EXPECT_EQ(read_message(), json::parse(R"({"jsonrpc":"2.0","id":1,"result":{}})"));
}

TEST_F(Stdio, EachMessageIsOneLineOfCompactJson) {
  write_line(
      R"({"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18"}})");
  json reply = read_message();
  EXPECT_EQ(reply["id"], "i");
  EXPECT_EQ(reply["result"]["protocolVersion"], "2025-06-18");
  write_line(R"({"jsonrpc":"2.0","id":2,"method":"tools/list"})");
  EXPECT_EQ(read_message()["result"]["tools"].size(), 3u);
}

TEST_F(Stdio, EndOfFileReturnsZeroAndClosesTheSession) {
  write_line(
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}})");
  auto running = link_.wait_for_call(0);
  ASSERT_TRUE(running);
  EXPECT_EQ(session_->calls_in_flight(), 1u);
  client_out_.reset();
  ASSERT_EQ(served_.get(), 0);
  EXPECT_TRUE(running->aborted());  // the running call was cancelled
  EXPECT_EQ(session_->calls_in_flight(), 0u);
  // Closed: a call is refused, and looprd is not asked.
  auto outbox = std::make_shared<RecordingOutbox>();
  session_->handle(
      json::parse(
          R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_file"}})"),
      outbox);
  ASSERT_EQ(outbox->messages().size(), 1u);
  EXPECT_EQ(outbox->messages()[0]["error"]["code"], rpc_code::internal_error);
  EXPECT_EQ(link_.call_count(), 1u);
  // The cancelled call got no response: nothing was written.
  server_out_.reset();
  EXPECT_EQ(read_message(), json("(end of output)"));
}

}  // namespace
}  // namespace loopr::mcp::test
