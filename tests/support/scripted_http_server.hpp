// ScriptedHttpServer: a loopback HTTP/1.1 server for the provider and
// transport tests. It answers requests in order from a queue of scripted
// replies; each reply is a list of steps (write these bytes, pause, close,
// reset the connection), so a test can send a Server-Sent Events body split
// at any byte, stall a stream, drop a connection mid-stream or answer 429
// with retry-after. It records every request it read (method, path, headers,
// body), so a test can check what a provider sent, byte for byte.
//
// Protocol: one request per connection is read (request line, headers,
// Content-Length body); the reply's bytes are written exactly as scripted
// (helpers build the usual status line and headers). After the last step the
// connection is closed. When the queue is empty the server answers 500 with
// a body naming the unexpected request, so a test sees the mistake. A server
// made with a Responder answers every request from it instead of the queue
// (ModelApiServer computes its replies from each request that way).
// Threads: serves on its own thread; push() and requests() are thread-safe;
// the responder is called on the server's thread, one request at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace loopr::test {

struct HttpStep {
  enum class Kind { write, pause, close, reset };
  Kind kind = Kind::write;
  std::string bytes;                  // write
  std::chrono::milliseconds delay{};  // pause

  static HttpStep write(std::string bytes) { return {Kind::write, std::move(bytes), {}}; }
  static HttpStep pause(std::chrono::milliseconds delay) { return {Kind::pause, {}, delay}; }
  static HttpStep close() { return {Kind::close, {}, {}}; }
  // Closes with SO_LINGER 0: the client sees ECONNRESET.
  static HttpStep reset() { return {Kind::reset, {}, {}}; }
};

struct ScriptedReply {
  std::vector<HttpStep> steps;

  // A whole response: status line, Content-Type, Content-Length, the extra
  // headers, the body.
  static ScriptedReply json(int status, const std::string& body,
                            std::vector<std::pair<std::string, std::string>> headers = {});
  // A streamed response: the head (text/event-stream, no Content-Length,
  // Connection: close), then the body written in the given pieces, with
  // `gap` between them.
  static ScriptedReply sse(const std::vector<std::string>& pieces,
                           std::chrono::milliseconds gap = {});
};

struct RecordedRequest {
  std::string method;
  std::string path;                            // with the query, as sent
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

class ScriptedHttpServer {
 public:
  using Responder = std::function<ScriptedReply(const RecordedRequest&)>;

  // Listens on 127.0.0.1 on a free port; throws std::runtime_error if it cannot.
  ScriptedHttpServer();
  // The same, answering every request from `responder` (push() is unused).
  explicit ScriptedHttpServer(Responder responder);
  ~ScriptedHttpServer();
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;

  void push(ScriptedReply reply);
  std::string base_url() const;  // "http://127.0.0.1:PORT"
  int port() const { return port_; }
  std::vector<RecordedRequest> requests() const;
  std::size_t connections() const;
  // Reply bytes written so far, over all connections: lets a test prove it
  // saw a piece before the server wrote the next one.
  std::size_t bytes_written() const;

 private:
  void serve();
  // Reads one request, plays its reply and closes `client` (owned from here).
  void answer(int client);
  bool read_request(int client, RecordedRequest& request);
  bool write_all(int client, std::string_view bytes);
  // Waits for `fd` to be ready for `events`, or for stop; false on stop or timeout.
  bool wait_for(int fd, short events, std::chrono::milliseconds timeout) const;

  int listener_ = -1;
  int stop_pipe_[2] = {-1, -1};
  int port_ = 0;
  mutable std::mutex mutex_;
  std::deque<ScriptedReply> replies_;
  Responder responder_;  // set before the thread starts, read-only after
  std::vector<RecordedRequest> requests_;
  std::size_t connections_ = 0;
  std::size_t bytes_written_ = 0;
  std::thread thread_;
};

}  // namespace loopr::test
