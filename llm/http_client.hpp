// HttpClient: HTTP/1.1 and HTTP/2 requests for the LLM providers, over
// libcurl, without ever blocking looprd's io_context.
//
// How (and why, see the .cpp's opening comment and bench/README.md): one
// worker thread per HttpClient runs a curl multi handle; requests reach it
// through a bounded queue, and everything a transfer produces (the response
// head, body chunks, the end) is posted back to the io_context in order, where
// an HttpExchange hands it to the coroutine that waits.
//
// Timeouts, each a distinct errc::timeout Error naming which one:
//   connect_timeout     TCP + TLS connection established;
//   first_byte_timeout  from the request sent to the response head;
//   idle_timeout        longest gap between two body bytes (a stalled stream).
// A connection reset, DNS failure or TLS error is errc::io with curl's words.
// No Error, log line or event ever contains a request header's value (the
// API key travels in one).
//
// Caps: the body a response may have is capped (max_response_bytes); past it
// the exchange fails with errc::too_large. Requests waiting for the worker are
// capped (kMaxQueuedRequests); past it start() fails the exchange at once.
//
// Threads: start(), HttpExchange's methods and every callback run on the io
// thread; only the worker touches curl handles.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace loopr::llm {

struct HttpRequest {
  std::string method = "POST";
  std::string url;  // http:// or https://
  // Sent as given. Values may be secrets: never logged, never in an Error.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds connect_timeout{10'000};
  std::chrono::milliseconds first_byte_timeout{120'000};
  std::chrono::milliseconds idle_timeout{60'000};
  std::size_t max_response_bytes = std::size_t{32} * 1024 * 1024;
};

struct HttpHead {
  long status = 0;
  // Header names in lower case; a repeated header keeps its last value.
  std::map<std::string, std::string> headers;
};

// One request in flight. Owned by shared_ptr (the worker's posts hold it).
class HttpExchange {
 public:
  virtual ~HttpExchange() = default;
  // The response head (once), or why the exchange failed before it.
  virtual asio::awaitable<Result<HttpHead>> head() = 0;
  // The next body bytes as they arrive; nullopt once the body is complete.
  // After an Error no more chunks come.
  virtual asio::awaitable<Result<std::optional<std::string>>> next_chunk() = 0;
  // Aborts the transfer; a waiting head()/next_chunk() returns a "cancelled"
  // Error. Safe to call more than once, and after the end.
  virtual void cancel() = 0;
};

class HttpClient {
 public:
  static constexpr std::size_t kMaxQueuedRequests = 256;

  // Starts the worker thread. Throws StartupError if curl cannot be set up.
  explicit HttpClient(asio::io_context& io);
  // Aborts every transfer and joins the worker.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  std::shared_ptr<HttpExchange> start(HttpRequest request);

  // Whole body in memory (for non-streamed requests), capped like a stream.
  asio::awaitable<Result<std::pair<HttpHead, std::string>>> fetch(HttpRequest request);

 private:
  struct Worker;
  std::unique_ptr<Worker> worker_;
};

}  // namespace loopr::llm
