// HttpClient against ScriptedHttpServer on loopback, with a real io_context:
// whole replies, streams that arrive piece by piece, every failure the
// transport reports (reset, refused, idle, first byte, too large, cancelled)
// and what it must never do (leak a header value, hang on destruction).
#include "llm/http_client.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "llm/sse_parser.hpp"
#include "tests/support/scripted_http_server.hpp"

namespace loopr::llm {
namespace {

using namespace std::chrono_literals;
using test::HttpStep;
using test::ScriptedHttpServer;
using test::ScriptedReply;

// A flag one coroutine waits on and another part of the io thread sets.
class Signal {
 public:
  explicit Signal(asio::io_context& io)
      : timer_(io, std::chrono::steady_clock::time_point::max()) {}
  void notify() {
    set_ = true;
    timer_.cancel();
  }
  asio::awaitable<void> wait() {
    while (!set_) {
      timer_.expires_at(std::chrono::steady_clock::time_point::max());
      std::error_code ignored;
      co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

 private:
  asio::steady_timer timer_;
  bool set_ = false;
};

// Waits for a condition another thread (the server) makes true; the server
// has no hook into the io_context, so this looks every few milliseconds.
asio::awaitable<bool> eventually(std::function<bool()> condition) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) co_return false;
    timer.expires_after(2ms);
    co_await timer.async_wait(asio::use_awaitable);
  }
  co_return true;
}

class HttpClientTest : public ::testing::Test {
 protected:
  // Runs the coroutine `make_task()` returns until it finishes (10 s at most).
  template <class MakeTask>
  void run(MakeTask&& make_task) {
    bool done = false;
    std::exception_ptr failure;
    asio::co_spawn(io_, make_task(), [&](std::exception_ptr e) {
      done = true;
      failure = e;
    });
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done && std::chrono::steady_clock::now() < deadline) {
      if (io_.stopped()) io_.restart();
      io_.run_one_for(50ms);
    }
    ASSERT_TRUE(done) << "the test's coroutine did not finish within 10 s";
    if (failure) std::rethrow_exception(failure);
  }

  HttpRequest request(std::string path = "/v1/messages") {
    HttpRequest r;
    r.url = server_.base_url() + path;
    r.headers = {{"content-type", "application/json"}};
    r.body = R"({"model":"m"})";
    r.connect_timeout = 2000ms;
    r.first_byte_timeout = 2000ms;
    r.idle_timeout = 2000ms;
    return r;
  }

  // Collects a whole exchange: the head, then chunks until the end or an error.
  struct Collected {
    std::optional<Result<HttpHead>> head;
    std::vector<std::string> chunks;
    std::optional<Error> error;
    bool ended = false;
  };
  static asio::awaitable<void> collect(std::shared_ptr<HttpExchange> exchange, Collected& out) {
    out.head.emplace(co_await exchange->head());
    if (!*out.head) {
      out.error = out.head->error();
      co_return;
    }
    for (;;) {
      Result<std::optional<std::string>> chunk = co_await exchange->next_chunk();
      if (!chunk) {
        out.error = chunk.error();
        co_return;
      }
      if (!chunk->has_value()) break;
      out.chunks.push_back(**chunk);
    }
    out.ended = true;
  }

  asio::io_context io_;
  ScriptedHttpServer server_;
};

// A port on 127.0.0.1 that nothing listens on: bound, read, closed.
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), length), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  ::close(fd);
  return ntohs(address.sin_port);
}

std::string sse_event(const std::string& type, const std::string& data) {
  return "event: " + type + "\ndata: " + data + "\n\n";
}

TEST_F(HttpClientTest, FetchReturnsAWholeJsonReply) {
  server_.push(ScriptedReply::json(200, R"({"id":"msg_1","content":[]})",
                                   {{"X-Request-Id", "req_42"}, {"Retry-After", "3"}}));
  HttpClient client(io_);
  std::optional<Result<std::pair<HttpHead, std::string>>> reply;
  run([&]() -> asio::awaitable<void> { reply.emplace(co_await client.fetch(request())); });
  ASSERT_TRUE(reply && reply->ok()) << (*reply).error().message;
  const auto& [head, body] = reply->value();
  EXPECT_EQ(head.status, 200);
  EXPECT_EQ(head.headers.at("content-type"), "application/json");
  EXPECT_EQ(head.headers.at("x-request-id"), "req_42");
  EXPECT_EQ(head.headers.at("retry-after"), "3");
  EXPECT_EQ(body, R"({"id":"msg_1","content":[]})");
}

TEST_F(HttpClientTest, AnErrorStatusIsAnAnswerNotATransportError) {
  server_.push(ScriptedReply::json(429, R"({"error":"rate_limited"})", {{"retry-after", "7"}}));
  HttpClient client(io_);
  std::optional<Result<std::pair<HttpHead, std::string>>> reply;
  run([&]() -> asio::awaitable<void> { reply.emplace(co_await client.fetch(request())); });
  ASSERT_TRUE(reply && reply->ok());
  EXPECT_EQ(reply->value().first.status, 429);
  EXPECT_EQ(reply->value().first.headers.at("retry-after"), "7");
  EXPECT_EQ(reply->value().second, R"({"error":"rate_limited"})");
}

TEST_F(HttpClientTest, TheRequestArrivesExactlyAsGiven) {
  server_.push(ScriptedReply::json(200, "{}"));
  server_.push(ScriptedReply::json(200, "{}"));
  server_.push(ScriptedReply::json(200, "{}"));
  HttpClient client(io_);
  HttpRequest post = request("/v1/messages?beta=true&x=%20y");
  post.headers = {{"x-api-key", "sk-ant-api03-abc"},
                  {"anthropic-version", "2023-06-01"},
                  {"Content-Type", "application/json"},
                  {"X-Empty", ""}};
  // A body big enough that curl would otherwise ask "Expect: 100-continue",
  // with bytes a text-minded transport might mangle.
  post.body = std::string("{\"a\":\"\xC3\xA9\\n\r\n\"}") + std::string(2 << 20, 'x');
  post.body.push_back('\0');
  post.body += "end";
  HttpRequest get = request("/v1/models");
  get.method = "GET";
  get.body.clear();
  get.headers = {{"Authorization", "Bearer sk-openai"}};
  HttpRequest put = request("/things/1");
  put.method = "PUT";
  put.body = "put-body";
  run([&]() -> asio::awaitable<void> {
    for (HttpRequest* r : {&post, &get, &put}) {
      Result<std::pair<HttpHead, std::string>> reply = co_await client.fetch(*r);
      EXPECT_TRUE(reply.ok());
    }
  });
  const std::vector<test::RecordedRequest> seen = server_.requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].path, "/v1/messages?beta=true&x=%20y");
  EXPECT_EQ(seen[0].headers.at("x-api-key"), "sk-ant-api03-abc");
  EXPECT_EQ(seen[0].headers.at("anthropic-version"), "2023-06-01");
  EXPECT_EQ(seen[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(seen[0].headers.at("x-empty"), "");
  EXPECT_EQ(seen[0].headers.at("content-length"), std::to_string(post.body.size()));
  EXPECT_EQ(seen[0].headers.count("expect"), 0u);
  EXPECT_TRUE(seen[0].body == post.body)
      << "the body differs (" << seen[0].body.size() << " of " << post.body.size() << " bytes)";
  EXPECT_EQ(seen[1].method, "GET");
  EXPECT_EQ(seen[1].path, "/v1/models");
  EXPECT_EQ(seen[1].headers.at("authorization"), "Bearer sk-openai");
  EXPECT_EQ(seen[1].body, "");
  EXPECT_EQ(seen[2].method, "PUT");
  EXPECT_EQ(seen[2].body, "put-body");
}

TEST_F(HttpClientTest, StreamedChunksArriveBeforeTheServerHasWrittenTheRest) {
  const std::vector<std::string> pieces = {
      sse_event("message_start", R"({"type":"message_start"})"),
      sse_event("content_block_delta", R"({"type":"content_block_delta","text":"Hi"})"),
      sse_event("message_stop", R"({"type":"message_stop"})")};
  server_.push(ScriptedReply::sse(pieces, 300ms));
  HttpClient client(io_);
  std::optional<Result<HttpHead>> head;
  std::string body;
  std::vector<SseEvent> events;
  // How much the server had written when each event was parsed here.
  std::vector<std::size_t> written_when_parsed;
  std::optional<Error> error;
  run([&]() -> asio::awaitable<void> {
    auto exchange = client.start(request());
    head.emplace(co_await exchange->head());
    if (!*head) co_return;
    SseParser parser;
    for (;;) {
      auto chunk = co_await exchange->next_chunk();
      if (!chunk) {
        error = chunk.error();
        co_return;
      }
      if (!chunk->has_value()) break;
      body += **chunk;
      const std::size_t before = events.size();
      EXPECT_TRUE(parser.feed(**chunk, events).ok());
      for (std::size_t i = before; i < events.size(); ++i) {
        written_when_parsed.push_back(server_.bytes_written());
      }
    }
    EXPECT_FALSE(parser.finish());
  });
  ASSERT_TRUE(head && head->ok());
  EXPECT_EQ((*head)->status, 200);
  EXPECT_EQ((*head)->headers.at("content-type"), "text/event-stream");
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(body, pieces[0] + pieces[1] + pieces[2]);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].type, "message_start");
  EXPECT_EQ(events[2].type, "message_stop");
  // The first event was in our hands before the server wrote the second and
  // third pieces; the second before the third. (The server counts a piece
  // once send() returned, so the count may lag what we parsed, never lead.)
  const std::size_t total = server_.bytes_written();
  ASSERT_EQ(written_when_parsed.size(), 3u);
  EXPECT_LE(written_when_parsed[0], total - pieces[1].size() - pieces[2].size());
  EXPECT_LE(written_when_parsed[1], total - pieces[2].size());
}

TEST_F(HttpClientTest, AConnectionResetMidStreamIsAnIoError) {
  test::ScriptedReply reply = ScriptedReply::sse({sse_event("ping", "{}")});
  reply.steps.push_back(HttpStep::pause(100ms));
  reply.steps.push_back(HttpStep::reset());
  server_.push(reply);
  HttpClient client(io_);
  Collected got;
  run([&]() -> asio::awaitable<void> { co_await collect(client.start(request()), got); });
  ASSERT_TRUE(got.head && got.head->ok());
  EXPECT_EQ(got.chunks, std::vector<std::string>{sse_event("ping", "{}")});
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, errc::io) << got.error->message;
  EXPECT_NE(got.error->message.find("reset"), std::string::npos) << got.error->message;
}

TEST_F(HttpClientTest, AStalledStreamIsAnIdleTimeout) {
  server_.push(ScriptedReply::sse({sse_event("ping", "{}"), sse_event("late", "{}")}, 5000ms));
  HttpClient client(io_);
  HttpRequest r = request();
  r.idle_timeout = 200ms;
  Collected got;
  run([&]() -> asio::awaitable<void> { co_await collect(client.start(r), got); });
  EXPECT_EQ(got.chunks, std::vector<std::string>{sse_event("ping", "{}")});
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, errc::timeout);
  EXPECT_NE(got.error->message.find("idle"), std::string::npos) << got.error->message;
}

TEST_F(HttpClientTest, ASlowHeadIsAFirstByteTimeout) {
  server_.push({{HttpStep::pause(5000ms), HttpStep::write("HTTP/1.1 200 OK\r\n\r\n")}});
  HttpClient client(io_);
  HttpRequest r = request();
  r.first_byte_timeout = 200ms;
  r.idle_timeout = 50ms;  // must not apply before the head
  Collected got;
  run([&]() -> asio::awaitable<void> { co_await collect(client.start(r), got); });
  ASSERT_TRUE(got.error);
  EXPECT_EQ(got.error->code, errc::timeout);
  EXPECT_NE(got.error->message.find("first-byte"), std::string::npos) << got.error->message;
  EXPECT_EQ(server_.requests().size(), 1u);
}

TEST_F(HttpClientTest, ARefusedConnectionIsAnIoError) {
  HttpClient client(io_);
  HttpRequest r = request();
  r.url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/v1/messages";
  std::optional<Result<std::pair<HttpHead, std::string>>> reply;
  run([&]() -> asio::awaitable<void> { reply.emplace(co_await client.fetch(r)); });
  ASSERT_TRUE(reply && !reply->ok());
  EXPECT_EQ(reply->error().code, errc::io);
  EXPECT_NE(reply->error().message.find("onnect"), std::string::npos) << reply->error().message;
}

TEST_F(HttpClientTest, ANonHttpUrlIsRefusedAtOnce) {
  HttpClient client(io_);
  HttpRequest r = request();
  r.url = "file:///etc/passwd";
  std::optional<Result<std::pair<HttpHead, std::string>>> reply;
  run([&]() -> asio::awaitable<void> { reply.emplace(co_await client.fetch(r)); });
  ASSERT_TRUE(reply && !reply->ok());
  EXPECT_EQ(reply->error().code, errc::invalid_arguments);
  EXPECT_EQ(server_.connections(), 0u);
}

TEST_F(HttpClientTest, ABodyOverTheCapIsTooLarge) {
  server_.push(ScriptedReply::json(200, std::string(1000, 'a')));
  server_.push(ScriptedReply::json(200, std::string(100'000, 'b')));
  server_.push(ScriptedReply::sse(std::vector<std::string>(50, sse_event("delta", "0123456789"))));
  HttpClient client(io_);
  HttpRequest r = request();
  r.max_response_bytes = 1000;
  std::optional<Result<std::pair<HttpHead, std::string>>> exact, over, stream;
  run([&]() -> asio::awaitable<void> {
    exact.emplace(co_await client.fetch(r));
    over.emplace(co_await client.fetch(r));
    stream.emplace(co_await client.fetch(r));
  });
  ASSERT_TRUE(exact && exact->ok()) << exact->error().message;  // exactly the cap is fine
  EXPECT_EQ(exact->value().second.size(), 1000u);
  ASSERT_TRUE(over && !over->ok());
  EXPECT_EQ(over->error().code, errc::too_large);
  ASSERT_TRUE(stream && !stream->ok());
  EXPECT_EQ(stream->error().code, errc::too_large);
}

TEST_F(HttpClientTest, CancelWhileWaitingReturnsCancelled) {
  server_.push({{HttpStep::pause(5000ms), HttpStep::write("HTTP/1.1 200 OK\r\n\r\n")}});
  HttpClient client(io_);
  std::optional<Result<HttpHead>> head;
  std::optional<Result<std::optional<std::string>>> after;
  run([&]() -> asio::awaitable<void> {
    auto exchange = client.start(request());
    Signal waiting(io_), finished(io_);
    // Named, so the closure outlives the coroutine it makes (this frame waits).
    auto waiter = [&]() -> asio::awaitable<void> {
      waiting.notify();
      head.emplace(co_await exchange->head());
      finished.notify();
    };
    asio::co_spawn(io_, waiter(), asio::detached);
    co_await waiting.wait();
    const bool arrived = co_await eventually([&] { return server_.requests().size() == 1; });
    EXPECT_TRUE(arrived);
    exchange->cancel();
    exchange->cancel();  // twice is fine
    co_await finished.wait();
    after.emplace(co_await exchange->next_chunk());
  });
  ASSERT_TRUE(head && !head->ok());
  EXPECT_EQ(head->error().code, "cancelled");
  ASSERT_TRUE(after && !after->ok());
  EXPECT_EQ(after->error().code, "cancelled");
}

TEST_F(HttpClientTest, CancellingTheWaitingCoroutineCancelsTheExchange) {
  // A provider races a wait against its own deadline with `||`: the loser
  // (our head()) is cancelled through asio's cancellation slot.
  using namespace asio::experimental::awaitable_operators;
  server_.push({{HttpStep::pause(5000ms), HttpStep::write("HTTP/1.1 200 OK\r\n\r\n")}});
  HttpClient client(io_);
  bool deadline_won = false;
  std::optional<Result<std::optional<std::string>>> after;
  run([&]() -> asio::awaitable<void> {
    auto exchange = client.start(request());
    asio::steady_timer deadline(io_, 100ms);
    auto winner = co_await (exchange->head() || deadline.async_wait(asio::use_awaitable));
    deadline_won = winner.index() == 1;
    after.emplace(co_await exchange->next_chunk());
  });
  EXPECT_TRUE(deadline_won);
  ASSERT_TRUE(after && !after->ok());
  EXPECT_EQ(after->error().code, "cancelled");
}

TEST_F(HttpClientTest, CancelAfterTheEndChangesNothing) {
  server_.push(ScriptedReply::json(200, "{}"));
  HttpClient client(io_);
  Collected got;
  std::optional<Result<std::optional<std::string>>> after;
  run([&]() -> asio::awaitable<void> {
    auto exchange = client.start(request());
    co_await collect(exchange, got);
    exchange->cancel();
    after.emplace(co_await exchange->next_chunk());
  });
  EXPECT_TRUE(got.ended);
  ASSERT_TRUE(after && after->ok());
  EXPECT_FALSE(after->value().has_value());
}

TEST_F(HttpClientTest, AHeaderValueNeverAppearsInAnError) {
  const std::string secret = "sk-SECRET-4f9a8b7c6d5e";
  auto with_secret = [&](HttpRequest r) {
    r.headers.push_back({"Authorization", "Bearer " + secret});
    r.headers.push_back({"x-api-key", secret});
    return r;
  };
  // Reset, idle, first byte, too large, a 500 body naming nothing secret,
  // refused, and a header value the transport refuses to send.
  test::ScriptedReply reset = ScriptedReply::sse({"data: x\n\n"});
  reset.steps.push_back(HttpStep::reset());
  server_.push(reset);
  server_.push(ScriptedReply::sse({"data: x\n\n", "data: y\n\n"}, 5000ms));
  server_.push({{HttpStep::pause(5000ms)}});
  server_.push(ScriptedReply::json(200, std::string(5000, 'z')));
  std::vector<HttpRequest> requests;
  for (int i = 0; i < 4; ++i)
    requests.push_back(with_secret(request()));
  requests[1].idle_timeout = 150ms;
  requests[2].first_byte_timeout = 150ms;
  requests[3].max_response_bytes = 100;
  HttpRequest refused = with_secret(request());
  refused.url = "http://127.0.0.1:" + std::to_string(closed_port()) + "/";
  requests.push_back(refused);
  HttpRequest injected = with_secret(request());
  injected.headers.push_back({"x-other", secret + "\r\nX-Evil: 1"});
  requests.push_back(injected);

  HttpClient client(io_);
  std::vector<Error> errors;
  run([&]() -> asio::awaitable<void> {
    for (const HttpRequest& r : requests) {
      Collected got;
      co_await collect(client.start(r), got);
      if (got.error) errors.push_back(*got.error);
    }
  });
  ASSERT_EQ(errors.size(), requests.size());
  const std::set<std::string> expected_codes = {errc::io, errc::timeout, errc::too_large,
                                                errc::invalid_arguments};
  for (const Error& error : errors) {
    const std::string everything = error.to_json().dump();
    EXPECT_EQ(everything.find(secret), std::string::npos) << everything;
    EXPECT_EQ(everything.find("SECRET"), std::string::npos) << everything;
    EXPECT_TRUE(expected_codes.contains(error.code)) << everything;
  }
}

TEST_F(HttpClientTest, TwentyConcurrentExchangesAllComplete) {
  constexpr int kCount = 20;
  std::set<std::string> expected;
  for (int i = 0; i < kCount; ++i) {
    const std::string body = "{\"n\":" + std::to_string(i) + "}";
    expected.insert(body);
    server_.push(ScriptedReply::sse({body.substr(0, 3), body.substr(3)}, 10ms));
  }
  HttpClient client(io_);
  std::set<std::string> bodies;
  int failures = 0;
  run([&]() -> asio::awaitable<void> {
    Signal all_done(io_);
    int finished = 0;
    auto fetch_one = [&]() -> asio::awaitable<void> {
      auto reply = co_await client.fetch(request());
      if (reply && reply->first.status == 200) {
        bodies.insert(reply->second);
      } else {
        ++failures;
      }
      if (++finished == kCount) all_done.notify();
    };
    for (int i = 0; i < kCount; ++i)
      asio::co_spawn(io_, fetch_one(), asio::detached);
    co_await all_done.wait();
  });
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(bodies, expected);
  EXPECT_EQ(server_.connections(), static_cast<std::size_t>(kCount));
}

TEST_F(HttpClientTest, DestroyingTheClientWithATransferInFlightEndsIt) {
  server_.push({{HttpStep::pause(30s)}});
  server_.push(ScriptedReply::sse({"data: a\n\n", "data: b\n\n"}, 30s));
  auto client = std::make_unique<HttpClient>(io_);
  std::optional<Result<HttpHead>> waiting_head;
  Collected streaming;
  std::shared_ptr<HttpExchange> first;
  run([&]() -> asio::awaitable<void> {
    first = client->start(request());
    auto second = client->start(request());
    Signal done_first(io_), done_second(io_);
    auto wait_head = [&]() -> asio::awaitable<void> {
      waiting_head.emplace(co_await first->head());
      done_first.notify();
    };
    auto wait_stream = [&]() -> asio::awaitable<void> {
      co_await collect(second, streaming);
      done_second.notify();
    };
    asio::co_spawn(io_, wait_head(), asio::detached);
    asio::co_spawn(io_, wait_stream(), asio::detached);
    // The server serves one connection at a time: the first request is
    // stalled there, the second waits in its backlog.
    const bool arrived = co_await eventually([&] { return server_.requests().size() == 1; });
    EXPECT_TRUE(arrived);
    client.reset();  // must neither hang nor crash
    co_await done_first.wait();
    co_await done_second.wait();
  });
  ASSERT_TRUE(waiting_head && !waiting_head->ok());
  EXPECT_EQ(waiting_head->error().code, "cancelled");
  ASSERT_TRUE(streaming.error);
  EXPECT_EQ(streaming.error->code, "cancelled");
  first->cancel();  // an exchange may outlive its client
}

}  // namespace
}  // namespace loopr::llm
