#include "mcp/http_server.hpp"

#include <httplib.h>
#include <sys/random.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

#include "common/ascii_text.hpp"
#include "mcp/json_rpc.hpp"
#include "proto/json_bounded.hpp"

namespace loopr::mcp {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kEndpoint = "/mcp";
constexpr std::size_t kMaxBodyBytes = std::size_t{16} * 1024 * 1024;
// Notifications an SSE stream holds for a client that does not read; beyond
// that, further ones are dropped (responses and requests never are).
constexpr std::size_t kMaxQueuedNotifications = 4096;
constexpr std::size_t kHttpThreads = 48;
// Tool calls answered at once across sessions: the rest of the workers stay
// free for answers to the server's requests, cancellations and pings.
constexpr std::size_t kMaxCallsHeld = kHttpThreads - 16;

bool constant_time_equal(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n > 0) got += static_cast<std::size_t>(n);
  }
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : raw) {
    const auto byte = static_cast<unsigned char>(c);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 15];
  }
  return out;
}

void refuse(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  response.set_content(encode(error_response(nullptr, rpc_code::invalid_request, message)),
                       "application/json");
}

// The messages of one request, from the session to the HTTP response.
class HttpOutbox final : public Outbox {
 public:
  // `streams`: answered as an event stream, which carries the server's own
  // requests; else only the response reaches the client.
  explicit HttpOutbox(bool streams) : streams_(streams) {}
  bool carries_requests() const override { return streams_; }
  void send(const json& message) override {
    std::lock_guard lock(mutex_);
    if (!message.contains("id") && queue_.size() >= kMaxQueuedNotifications) return;
    queue_.push_back(message);
    changed_.notify_all();
  }
  void finish() override {
    std::lock_guard lock(mutex_);
    finished_ = true;
    changed_.notify_all();
  }
  // The next message, waiting up to `wait`; nullopt if none came.
  std::optional<json> next(std::chrono::milliseconds wait) {
    std::unique_lock lock(mutex_);
    changed_.wait_for(lock, wait, [&] { return !queue_.empty() || finished_; });
    if (queue_.empty()) return std::nullopt;
    json message = std::move(queue_.front());
    queue_.pop_front();
    return message;
  }
  bool done() {
    std::lock_guard lock(mutex_);
    return finished_ && queue_.empty();
  }
  void wait_finished() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return finished_; });
  }
  // The response among what was sent (the last message with an id and no
  // method), else null.
  json response() {
    std::lock_guard lock(mutex_);
    for (auto it = queue_.rbegin(); it != queue_.rend(); ++it) {
      if (it->contains("id") && !it->contains("method")) return *it;
    }
    return nullptr;
  }

 private:
  const bool streams_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<json> queue_;
  bool finished_ = false;
};

struct SessionEntry {
  std::unique_ptr<McpSession> session;
  Clock::time_point last_used = Clock::now();
};

}  // namespace

bool is_loopback_host(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host == "[::1]";
}

struct HttpServer::State {
  HttpOptions options;
  httplib::Server server;
  int port = 0;
  std::set<std::string> allowed_hosts;    // "127.0.0.1:PORT", ...
  std::set<std::string> allowed_origins;  // "http://127.0.0.1:PORT", ...
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<SessionEntry>> sessions;

  bool check(const httplib::Request& request, httplib::Response& response);
  void post(const httplib::Request& request, httplib::Response& response);
  void remove(const httplib::Request& request, httplib::Response& response);
  std::shared_ptr<SessionEntry> find(const std::string& id);
  // A new session and its id; nullptr when every slot is busy.
  std::pair<std::string, std::shared_ptr<SessionEntry>> create();
  // Ends every session (cancelling their calls, so no worker stays blocked).
  void close_sessions();
  // Tool calls being answered: each holds a worker thread until it ends.
  std::atomic<std::size_t> calls_held{0};
};

bool HttpServer::State::check(const httplib::Request& request, httplib::Response& response) {
  const std::string host = ascii_lower(request.get_header_value("Host"));
  if (allowed_hosts.count(host) == 0) {
    refuse(response, 403,
           "Host '" + host + "' is not this server's loopback address: refused (DNS rebinding)");
    return false;
  }
  if (request.has_header("Origin") &&
      allowed_origins.count(ascii_lower(request.get_header_value("Origin"))) == 0) {
    refuse(response, 403,
           "Origin '" + request.get_header_value("Origin") +
               "' is not this server's loopback origin: refused (DNS rebinding)");
    return false;
  }
  if (!options.token.empty()) {
    const std::string authorization = request.get_header_value("Authorization");
    const std::string scheme = "bearer ";
    const bool bearer = authorization.size() > scheme.size() &&
                        ascii_lower(authorization.substr(0, scheme.size())) == scheme;
    if (!bearer || !constant_time_equal(authorization.substr(scheme.size()), options.token)) {
      // RFC 6750 §3: an error code only when a token came and was wrong.
      response.set_header("WWW-Authenticate",
                          bearer ? "Bearer realm=\"loopr mcp\", error=\"invalid_token\""
                                 : "Bearer realm=\"loopr mcp\"");
      refuse(response, 401,
             "this server needs `Authorization: Bearer <token>`, the token looprctl mcp --http "
             "wrote to its token file");
      return false;
    }
  }
  if (request.has_header("MCP-Protocol-Version") &&
      !is_supported_protocol_version(request.get_header_value("MCP-Protocol-Version"))) {
    refuse(response, 400,
           "MCP-Protocol-Version '" + request.get_header_value("MCP-Protocol-Version") +
               "' is not one this server speaks (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)");
    return false;
  }
  return true;
}

std::shared_ptr<SessionEntry> HttpServer::State::find(const std::string& id) {
  std::lock_guard lock(mutex);
  auto it = sessions.find(id);
  if (it == sessions.end()) return nullptr;
  it->second->last_used = Clock::now();
  return it->second;
}

std::pair<std::string, std::shared_ptr<SessionEntry>> HttpServer::State::create() {
  std::shared_ptr<SessionEntry> evicted;
  auto entry = std::make_shared<SessionEntry>();
  std::string id = random_hex(16);
  {
    std::lock_guard lock(mutex);
    if (sessions.size() >= options.max_sessions) {
      auto idlest = sessions.end();
      for (auto it = sessions.begin(); it != sessions.end(); ++it) {
        if (it->second->session->calls_in_flight() != 0) continue;
        if (idlest == sessions.end() || it->second->last_used < idlest->second->last_used)
          idlest = it;
      }
      if (idlest == sessions.end()) return {"", nullptr};
      evicted = std::move(idlest->second);
      sessions.erase(idlest);
    }
    entry->session = options.new_session();
    sessions[id] = entry;
  }
  // Closed, not only forgotten: a request that found it just before may not
  // start a call on it that nobody could cancel.
  if (evicted) evicted->session->close();
  return {id, entry};
}

void HttpServer::State::close_sessions() {
  std::map<std::string, std::shared_ptr<SessionEntry>> ended;
  {
    std::lock_guard lock(mutex);
    ended.swap(sessions);
  }
  for (auto& [id, entry] : ended)
    entry->session->close();
}

void HttpServer::State::post(const httplib::Request& request, httplib::Response& response) {
  // Bounded: a hostile nesting depth would overflow the stack when the
  // message is copied, killing every session.
  auto parsed = proto::parse_json_bounded(request.body);
  if (!parsed) {
    response.status = 400;
    response.set_content(
        encode(error_response(nullptr, rpc_code::parse_error,
                              "the request body is not JSON: " + parsed.error().message)),
        "application/json");
    return;
  }
  const json value = std::move(*parsed);
  const Message message = classify(value);
  std::shared_ptr<SessionEntry> entry;
  std::string session_id = request.get_header_value("Mcp-Session-Id");
  const bool starts_session =
      message.kind == MessageKind::request && message.method == "initialize" && session_id.empty();
  if (starts_session) {
    std::tie(session_id, entry) = create();
    if (!entry) {
      refuse(response, 503,
             "every MCP session of this server is running calls: try again when one ends");
      return;
    }
  } else if (session_id.empty()) {
    refuse(response, 400, "Mcp-Session-Id header missing: send initialize first");
    return;
  } else {
    entry = find(session_id);
    if (!entry) {
      refuse(response, 404,
             "no MCP session '" + session_id +
                 "' (it ended, or the server restarted): send initialize again");
      return;
    }
  }
  // Each tools/call holds a worker until it ends; keep workers free for the
  // requests that answer, approve or cancel the calls.
  std::shared_ptr<void> held;
  if (message.kind == MessageKind::request && message.method == "tools/call") {
    if (calls_held.fetch_add(1) >= kMaxCallsHeld) {
      --calls_held;
      response.status = 200;
      response.set_content(
          encode(error_response(message.id, rpc_code::internal_error,
                                "loopr's MCP HTTP server runs at most " +
                                    std::to_string(kMaxCallsHeld) + " tool calls at once",
                                json{{"hint", "wait for a call to finish, then call again"}})),
          "application/json");
      return;
    }
    held = std::shared_ptr<void>(nullptr, [this](void*) { --calls_held; });
  }
  const bool streams = message.kind == MessageKind::request && message.method == "tools/call" &&
                       ascii_lower(request.get_header_value("Accept")).find("text/event-stream") !=
                           std::string::npos;
  auto outbox = std::make_shared<HttpOutbox>(streams);
  entry->session->handle(value, outbox);
  if (starts_session) response.set_header("Mcp-Session-Id", session_id);
  if (message.kind == MessageKind::notification || message.kind == MessageKind::response) {
    response.status = 202;
    return;
  }
  if (streams) {
    response.status = 200;
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider(
        "text/event-stream", [outbox, entry, held](std::size_t, httplib::DataSink& sink) {
          if (auto next = outbox->next(std::chrono::milliseconds(500))) {
            const std::string event = "event: message\ndata: " + encode(*next) + "\n\n";
            return sink.write(event.data(), event.size());
          }
          if (outbox->done()) {
            sink.done();
            return true;
          }
          return sink.is_writable();
        });
    return;
  }
  outbox->wait_finished();
  const json reply = outbox->response();
  if (reply.is_null()) {
    response.status = 202;  // a cancelled call: nothing to answer
    return;
  }
  response.status = message.kind == MessageKind::invalid ? 400 : 200;
  response.set_content(encode(reply), "application/json");
}

void HttpServer::State::remove(const httplib::Request& request, httplib::Response& response) {
  const std::string id = request.get_header_value("Mcp-Session-Id");
  if (id.empty()) {
    refuse(response, 400, "Mcp-Session-Id header missing: name the session to end");
    return;
  }
  std::shared_ptr<SessionEntry> entry;
  {
    std::lock_guard lock(mutex);
    auto it = sessions.find(id);
    if (it != sessions.end()) {
      entry = std::move(it->second);
      sessions.erase(it);
    }
  }
  if (!entry) {
    refuse(response, 404, "no MCP session '" + id + "'");
    return;
  }
  entry->session->close();
  response.status = 200;
}

Result<std::unique_ptr<HttpServer>> HttpServer::bind(HttpOptions options) {
  if (!is_loopback_host(options.host)) {
    return make_error(errc::invalid_arguments,
                      "looprctl mcp --http binds to loopback only (127.0.0.1, ::1 or localhost), "
                      "not '" +
                          options.host + "'",
                      "a TCP port carries no peer credentials: use --http 127.0.0.1:PORT, and "
                      "tunnel it (ssh -L) to reach it from elsewhere");
  }
  if (options.port < 0 || options.port > 65535) {
    return make_error(errc::invalid_arguments, "--http port must be 0 to 65535");
  }
  auto state = std::make_unique<State>();
  state->options = std::move(options);
  const std::string bind_host = state->options.host == "localhost" ? "127.0.0.1"
                                : state->options.host == "[::1]"   ? "::1"
                                                                   : state->options.host;
  httplib::Server& server = state->server;
  server.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  server.set_payload_max_length(kMaxBodyBytes);
  if (state->options.port == 0) {
    state->port = server.bind_to_any_port(bind_host);
    if (state->port <= 0) {
      return make_error(errc::io, "cannot bind " + bind_host + " to any port");
    }
  } else {
    if (!server.bind_to_port(bind_host, state->options.port)) {
      return make_error(errc::io,
                        "cannot bind " + bind_host + ":" + std::to_string(state->options.port),
                        "is another server on that port? pick another, or 0 for any");
    }
    state->port = state->options.port;
  }
  const std::string port = std::to_string(state->port);
  for (const char* name : {"127.0.0.1", "localhost", "[::1]"}) {
    state->allowed_hosts.insert(std::string(name) + ":" + port);
    state->allowed_origins.insert("http://" + std::string(name) + ":" + port);
    state->allowed_origins.insert("https://" + std::string(name) + ":" + port);
  }
  State* raw = state.get();
  server.set_pre_routing_handler(
      [raw](const httplib::Request& request, httplib::Response& response) {
        return raw->check(request, response) ? httplib::Server::HandlerResponse::Unhandled
                                             : httplib::Server::HandlerResponse::Handled;
      });
  server.Post(kEndpoint, [raw](const httplib::Request& request, httplib::Response& response) {
    raw->post(request, response);
  });
  server.Delete(kEndpoint, [raw](const httplib::Request& request, httplib::Response& response) {
    raw->remove(request, response);
  });
  server.Get(kEndpoint, [](const httplib::Request&, httplib::Response& response) {
    response.set_header("Allow", "POST, DELETE");
    refuse(response, 405, "this server opens no stream of its own: POST requests to /mcp");
  });
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
}

HttpServer::HttpServer(std::unique_ptr<State> state) : state_(std::move(state)) {}

HttpServer::~HttpServer() {
  stop();
}

int HttpServer::port() const {
  return state_->port;
}

std::string HttpServer::url() const {
  const std::string& host = state_->options.host;
  const std::string shown = host == "::1" ? "[::1]" : host;
  return "http://" + shown + ":" + std::to_string(state_->port) + kEndpoint;
}

bool HttpServer::serve() {
  const bool listened = state_->server.listen_after_bind();
  state_->close_sessions();
  return listened;
}

void HttpServer::stop() {
  state_->server.stop();
  // The server returns only once its workers do: end the calls they wait on.
  state_->close_sessions();
}

}  // namespace loopr::mcp
