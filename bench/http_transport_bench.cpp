// The LLM providers' HTTP transport, measured (bench/README.md, "LLM HTTP
// transport"): HttpClient (a worker thread running curl multi, every result
// posted to the io_context) against libcurl's easy interface on the calling
// thread, side by side in one run, interleaved (the order rotates every
// round), against a keep-alive HTTP/1.1 server on 127.0.0.1 in this file:
//   small   a POST answered by a 1 KiB JSON body, one after the other:
//           latency p50/p90/p99 per request
//   burst   one reply of N server-sent events (64 bytes each, one write and
//           one HTTP chunk per event) written back to back: time to the last
//   paced   the same events written every G µs: each event's delivery
//           latency, from the server's stamp (inside the event) to the
//           moment the consumer holds it
//   timer   S paced streams at once while a coroutine on the io thread waits
//           on a 1 ms timer again and again: its lateness, with HttpClient
//           and with curl_easy_perform called on the io thread
// Connections are reused everywhere (the server counts the connections it
// accepts and the bench prints how many each way opened while measured).
// Run by hand, never as a timed test:
//   build/bin/http_transport_bench [--rounds R] [--requests N] [--events N]
//     [--bursts B] [--gap-us G] [--streams S] [--timer-events N] [--timer-gap-us G]
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench/sample_stats.hpp"
#include "llm/http_client.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using loopr::llm::HttpClient;
using loopr::llm::HttpRequest;

// --- figures ----------------------------------------------------------------

double us_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::micro>(to - from).count();
}

double median_of(std::vector<double> values) {
  return loopr::bench::stats_of(std::move(values)).p50;
}

std::string load_average() {
  std::ifstream file("/proc/loadavg");
  std::string one, five, fifteen;
  file >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

// --- the events -------------------------------------------------------------

// One server-sent event of exactly kEventBytes, like a model's text delta,
// carrying the server's steady_clock reading (ns, 16 digits) when it was sent:
//   data: {"type":"text_delta","text":"word","t":0000123456789012}\n\n
constexpr std::size_t kEventBytes = 64;
constexpr std::size_t kStampDigits = 16;
constexpr std::string_view kEventHead = R"(data: {"type":"text_delta","text":"word","t":)";
constexpr std::size_t kStampOffset = kEventHead.size();
static_assert(kEventHead.size() + kStampDigits + 3 == kEventBytes);

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string make_event(std::int64_t stamp) {
  char digits[kStampDigits + 1];
  std::snprintf(digits, sizeof digits, "%016lld", static_cast<long long>(stamp));
  std::string event(kEventHead);
  event.append(digits, kStampDigits);
  event += "}\n\n";
  return event;
}

// Cuts a byte stream into events, whatever its chunking, and records for each
// complete event how long after its stamp it reached the consumer.
class EventLatency {
 public:
  void feed(std::string_view bytes, Clock::time_point received) {
    ++chunks_;
    const std::int64_t at =
        std::chrono::duration_cast<std::chrono::nanoseconds>(received.time_since_epoch()).count();
    while (!bytes.empty()) {
      const std::size_t take = std::min(bytes.size(), kEventBytes - partial_.size());
      partial_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (partial_.size() < kEventBytes) break;
      std::int64_t stamp = 0;
      const char* digits = partial_.data() + kStampOffset;
      std::from_chars(digits, digits + kStampDigits, stamp);
      latencies_us_.push_back(static_cast<double>(at - stamp) / 1000.0);
      partial_.clear();
    }
  }
  std::size_t events() const { return latencies_us_.size(); }
  std::size_t chunks() const { return chunks_; }
  const std::vector<double>& latencies_us() const { return latencies_us_; }

 private:
  std::string partial_;
  std::size_t chunks_ = 0;
  std::vector<double> latencies_us_;
};

// --- the loopback server ----------------------------------------------------

// A keep-alive HTTP/1.1 server on 127.0.0.1 (a free port), one thread per
// connection. It reads a request (head, Content-Length body) and answers by
// path:
//   /json                       200, a 1 KiB JSON body with Content-Length
//   /sse?events=N&gap_us=G      200, text/event-stream, chunked: N events,
//                               event i written at start + i*G (at once if
//                               late), each in its own send()
// Sockets are SOCK_CLOEXEC, TCP_NODELAY; a request head is capped at 64 KiB.
// Threads: accept() on its own thread; connections() is thread-safe.
class LoopbackServer {
 public:
  LoopbackServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener_ < 0) throw std::runtime_error("socket: " + std::string(std::strerror(errno)));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
        ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ::close(listener_);
      throw std::runtime_error("cannot listen on 127.0.0.1: " + std::string(std::strerror(errno)));
    }
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }

  ~LoopbackServer() {
    stopping_ = true;
    ::shutdown(listener_, SHUT_RDWR);  // wakes accept()
    acceptor_.join();
    {
      std::lock_guard lock(mutex_);
      for (const int fd : open_fds_)
        ::shutdown(fd, SHUT_RDWR);
    }
    for (auto& thread : handlers_)
      thread.join();
    ::close(listener_);
  }
  LoopbackServer(const LoopbackServer&) = delete;
  LoopbackServer& operator=(const LoopbackServer&) = delete;

  std::string url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  std::size_t connections() const { return accepted_; }

 private:
  void accept_loop() {
    while (!stopping_) {
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++accepted_;
      std::lock_guard lock(mutex_);
      open_fds_.push_back(fd);
      handlers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  static bool send_all(int fd, std::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t sent = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (sent < 0 && errno == EINTR) continue;
      if (sent <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(sent));
    }
    return true;
  }

  static std::size_t query_number(std::string_view target, std::string_view name) {
    const std::size_t at = target.find(name);
    if (at == std::string_view::npos) return 0;
    std::size_t value = 0;
    const char* first = target.data() + at + name.size();
    while (*first == ' ')
      ++first;
    std::from_chars(first, target.data() + target.size(), value);
    return value;
  }

  // Serves requests on `fd` until the peer closes it. The fd stays open
  // (listed in open_fds_) until the destructor, so shutdown() never hits a
  // reused number.
  void serve(int fd) {
    std::string buffer;
    char block[16 * 1024];
    for (;;) {
      std::size_t head_end = std::string::npos;
      while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (buffer.size() > 64 * 1024) return;
        const ssize_t got = ::recv(fd, block, sizeof block, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return;
        buffer.append(block, static_cast<std::size_t>(got));
      }
      const std::string head = buffer.substr(0, head_end + 4);
      std::string lowered = head;
      std::transform(lowered.begin(), lowered.end(), lowered.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const std::size_t body_length = query_number(lowered, "\r\ncontent-length:");
      while (buffer.size() < head.size() + body_length) {
        const ssize_t got = ::recv(fd, block, sizeof block, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return;
        buffer.append(block, static_cast<std::size_t>(got));
      }
      buffer.erase(0, head.size() + body_length);
      const std::size_t target_at = head.find(' ') + 1;
      const std::string_view target =
          std::string_view(head).substr(target_at, head.find(' ', target_at) - target_at);
      if (!(target.starts_with("/sse") ? stream(fd, target) : send_all(fd, json_reply()))) return;
    }
  }

  static const std::string& json_reply() {
    static const std::string reply = [] {
      std::string body =
          R"({"id":"msg_bench","type":"message","role":"assistant","model":"m",)"
          R"("usage":{"input_tokens":12,"output_tokens":200},"content":[{"type":"text","text":")";
      const std::string_view tail = R"("}]})";
      body.append(1024 - body.size() - tail.size(), 'x');
      body += tail;
      return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    return reply;
  }

  static bool stream(int fd, std::string_view target) {
    const std::size_t events = query_number(target, "events=");
    const auto gap = std::chrono::microseconds(query_number(target, "gap_us="));
    if (!send_all(fd,
                  "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                  "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n")) {
      return false;
    }
    const Clock::time_point start = Clock::now();
    std::string chunk;
    for (std::size_t i = 0; i < events; ++i) {
      if (gap.count() > 0) std::this_thread::sleep_until(start + gap * static_cast<long>(i));
      chunk = "40\r\n" + make_event(now_ns()) + "\r\n";  // 0x40 == kEventBytes
      if (!send_all(fd, chunk)) return false;
    }
    return send_all(fd, "0\r\n\r\n");
  }

  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> accepted_{0};
  std::thread acceptor_;
  std::mutex mutex_;  // guards open_fds_ and handlers_
  std::vector<int> open_fds_;
  std::vector<std::thread> handlers_;
};

// --- the clients ------------------------------------------------------------

constexpr std::string_view kRequestBody =
    R"({"model":"m","max_tokens":64,"stream":false,"messages":[{"role":"user","content":"hi"}]})";

HttpRequest http_request(const std::string& url) {
  HttpRequest request;
  request.url = url;
  request.headers = {{"content-type", "application/json"}};
  request.body = kRequestBody;
  return request;
}

// Runs `task` on `io` until it and everything it started are done.
void run_on(asio::io_context& io, asio::awaitable<void> task) {
  std::exception_ptr failure;
  asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) { failure = e; });
  io.restart();
  io.run();
  if (failure) std::rethrow_exception(failure);
}

// Consumes one streamed reply through HttpClient, feeding `latency` (if not
// null) as chunks reach the coroutine. Returns the body bytes.
asio::awaitable<std::size_t> consume_stream(HttpClient& client, std::string url,
                                            EventLatency* latency) {
  auto exchange = client.start(http_request(url));
  auto head = co_await exchange->head();
  if (!head || head->status != 200) throw std::runtime_error("the stream's head failed");
  std::size_t bytes = 0;
  for (;;) {
    auto chunk = co_await exchange->next_chunk();
    const Clock::time_point received = Clock::now();
    if (!chunk) throw std::runtime_error("stream: " + chunk.error().message);
    if (!chunk->has_value()) break;
    if (latency != nullptr) latency->feed(**chunk, received);
    bytes += (*chunk)->size();
  }
  co_return bytes;
}

// libcurl's easy interface on the calling thread: the baseline. The options
// are HttpClient's that matter on the wire (POST body, headers, no
// Expect: 100-continue, no proxy, no signals).
class EasyClient {
 public:
  // `reuse`: one handle for every request (its connection cache keeps the
  // connection); otherwise a new handle per request, as HttpClient makes,
  // with connections kept in a share handle.
  explicit EasyClient(bool reuse) : reuse_(reuse) {
    share_ = curl_share_init();
    curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
    if (reuse_) easy_ = curl_easy_init();
  }
  ~EasyClient() {
    if (easy_ != nullptr) curl_easy_cleanup(easy_);
    curl_share_cleanup(share_);
  }
  EasyClient(const EasyClient&) = delete;
  EasyClient& operator=(const EasyClient&) = delete;

  // Performs a POST to `url`; `on_chunk` sees each body chunk as curl hands it.
  void perform(const std::string& url, std::function<void(std::string_view)> on_chunk) {
    CURL* easy = reuse_ ? easy_ : curl_easy_init();
    curl_slist* headers = curl_slist_append(nullptr, "content-type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(kRequestBody.size()));
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, kRequestBody.data());
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &EasyClient::on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &on_chunk);
    if (!reuse_) curl_easy_setopt(easy, CURLOPT_SHARE, share_);
    const CURLcode code = curl_easy_perform(easy);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    if (!reuse_) curl_easy_cleanup(easy);
    if (code != CURLE_OK || status != 200) {
      throw std::runtime_error(std::string("curl_easy_perform: ") + curl_easy_strerror(code));
    }
  }

 private:
  static std::size_t on_body(char* bytes, std::size_t size, std::size_t count, void* data) {
    (*static_cast<std::function<void(std::string_view)>*>(data))(
        std::string_view(bytes, size * count));
    return size * count;
  }

  bool reuse_;
  CURLSH* share_ = nullptr;
  CURL* easy_ = nullptr;
};

// --- the measurements -------------------------------------------------------

struct Options {
  int rounds = 5;
  int requests = 500;
  std::size_t events = 2000;
  int bursts = 5;  // burst streams per way per round (their median counts)
  int gap_us = 200;
  int streams = 8;
  std::size_t timer_events = 1000;
  int timer_gap_us = 250;
};

struct Setup {
  LoopbackServer& server;
  asio::io_context& io;
  HttpClient& client;
  EasyClient& easy;        // reused handle (the baseline)
  EasyClient& easy_fresh;  // a new handle per request
  const Options& options;
};

// 1. small: per-request latency, µs.
std::vector<double> small_requests(Setup& s, int way) {
  const std::string url = s.server.url("/json");
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(s.options.requests));
  if (way == 0) {
    run_on(s.io, [&]() -> asio::awaitable<void> {
      for (int i = 0; i < s.options.requests; ++i) {
        const Clock::time_point start = Clock::now();
        auto reply = co_await s.client.fetch(http_request(url));
        samples.push_back(us_between(start, Clock::now()));
        if (!reply || reply->first.status != 200 || reply->second.size() != 1024) {
          throw std::runtime_error("fetch failed");
        }
      }
    }());
    return samples;
  }
  EasyClient& easy = way == 1 ? s.easy : s.easy_fresh;
  for (int i = 0; i < s.options.requests; ++i) {
    std::string body;
    const Clock::time_point start = Clock::now();
    easy.perform(url, [&](std::string_view bytes) { body.append(bytes); });
    samples.push_back(us_between(start, Clock::now()));
    if (body.size() != 1024) throw std::runtime_error("short JSON body");
  }
  return samples;
}

struct StreamFigures {
  double total_us = 0;  // request to the last event
  std::size_t chunks = 0;
  std::vector<double> latencies_us;
};

// 2. burst (gap 0) and paced (gap > 0): one streamed reply.
StreamFigures one_stream(Setup& s, int way, int gap_us) {
  const std::string url = s.server.url("/sse?events=" + std::to_string(s.options.events) +
                                       "&gap_us=" + std::to_string(gap_us));
  EventLatency latency;
  const Clock::time_point start = Clock::now();
  if (way == 0) {
    run_on(s.io,
           [&]() -> asio::awaitable<void> { co_await consume_stream(s.client, url, &latency); }());
  } else {
    EasyClient& easy = way == 1 ? s.easy : s.easy_fresh;
    easy.perform(url, [&](std::string_view bytes) { latency.feed(bytes, Clock::now()); });
  }
  StreamFigures figures;
  figures.total_us = us_between(start, Clock::now());
  if (latency.events() != s.options.events) throw std::runtime_error("events lost");
  figures.chunks = latency.chunks();
  figures.latencies_us = latency.latencies_us();
  return figures;
}

struct TimerFigures {
  std::vector<double> lateness_us;
  double total_us = 0;
};

// Waits on a 1 ms timer again and again while `more()`, recording each
// wake-up's lateness past the deadline.
asio::awaitable<void> tick(asio::io_context& io, std::function<bool()> more,
                           std::vector<double>& lateness_us) {
  asio::steady_timer timer(io);
  while (more()) {
    const Clock::time_point due = Clock::now() + std::chrono::milliseconds(1);
    timer.expires_at(due);
    co_await timer.async_wait(asio::use_awaitable);
    lateness_us.push_back(us_between(due, Clock::now()));
  }
}

asio::awaitable<void> stream_task(HttpClient& client, std::string url, std::size_t& bytes,
                                  int& running) {
  bytes += co_await consume_stream(client, std::move(url), nullptr);
  --running;
}

// 3. timer: a 1 ms timer on the io thread while `streams` paced streams run.
// way 0: HttpClient; way 1: curl_easy_perform on the io thread (each stream
// a handler of its own, posted after the ticker started); way 2: no
// streams, for `idle_for`.
TimerFigures timer_lateness(Setup& s, int way, std::vector<std::unique_ptr<EasyClient>>& blocking,
                            Clock::duration idle_for) {
  const std::string url = s.server.url("/sse?events=" + std::to_string(s.options.timer_events) +
                                       "&gap_us=" + std::to_string(s.options.timer_gap_us));
  TimerFigures figures;
  const int streams = way == 2 ? 0 : s.options.streams;
  int running = streams;
  std::size_t bytes = 0;
  std::exception_ptr failure;
  auto note = [&](std::exception_ptr e) {
    if (e && !failure) failure = e;
  };
  const Clock::time_point start = Clock::now();
  auto more = [&] { return way == 2 ? Clock::now() - start < idle_for : running > 0; };
  asio::co_spawn(s.io, tick(s.io, more, figures.lateness_us), note);
  for (int i = 0; i < streams; ++i) {
    if (way == 0) {
      asio::co_spawn(s.io, stream_task(s.client, url, bytes, running), note);
    } else {
      EasyClient& easy = *blocking[static_cast<std::size_t>(i)];
      asio::post(s.io, [&] {
        easy.perform(url, [&](std::string_view chunk) { bytes += chunk.size(); });
        --running;
      });
    }
  }
  s.io.restart();
  s.io.run();
  if (failure) std::rethrow_exception(failure);
  figures.total_us = us_between(start, Clock::now());
  if (bytes != static_cast<std::size_t>(streams) * s.options.timer_events * kEventBytes) {
    throw std::runtime_error("timer: stream bytes lost");
  }
  return figures;
}

const char* const kWays[] = {"HttpClient (worker + post)", "curl_easy, reused handle",
                             "curl_easy, new handle per request"};

void print_stats(const char* label, const loopr::bench::SampleStats& st, const char* extra = "") {
  std::printf("  %-36s n=%-6zu p50 %8.1f  p90 %8.1f  p99 %8.1f  max %9.1f us%s\n", label, st.n,
              st.p50, st.p90, st.p99, st.max, extra);
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long value = std::atol(argv[i + 1]);
    if (flag == "--rounds")
      options.rounds = static_cast<int>(value);
    else if (flag == "--requests")
      options.requests = static_cast<int>(value);
    else if (flag == "--events")
      options.events = static_cast<std::size_t>(value);
    else if (flag == "--bursts")
      options.bursts = static_cast<int>(value);
    else if (flag == "--gap-us")
      options.gap_us = static_cast<int>(value);
    else if (flag == "--streams")
      options.streams = static_cast<int>(value);
    else if (flag == "--timer-events")
      options.timer_events = static_cast<std::size_t>(value);
    else if (flag == "--timer-gap-us")
      options.timer_gap_us = static_cast<int>(value);
    else {
      std::cerr << "unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    curl_global_init(CURL_GLOBAL_DEFAULT);
    LoopbackServer server;
    asio::io_context io;
    HttpClient client(io);
    EasyClient easy(true);
    EasyClient easy_fresh(false);
    std::vector<std::unique_ptr<EasyClient>> blocking;
    for (int i = 0; i < options.streams; ++i)
      blocking.push_back(std::make_unique<EasyClient>(true));
    Setup s{server, io, client, easy, easy_fresh, options};

    std::printf("load average at start: %s\n", load_average().c_str());
    std::printf(
        "rounds %d; small: %d requests per way per round; stream: %zu events of %zu B "
        "(burst, and paced every %d us); timer: %d streams of %zu events every %d us\n",
        options.rounds, options.requests, options.events, kEventBytes, options.gap_us,
        options.streams, options.timer_events, options.timer_gap_us);

    // Warm-up: every way opens its connections (the timer test's too).
    for (int way = 0; way < 3; ++way) {
      Options warm = options;
      warm.requests = 20;
      Setup w{server, io, client, easy, easy_fresh, warm};
      small_requests(w, way);
      one_stream(w, way, 0);
    }
    timer_lateness(s, 0, blocking, {});
    timer_lateness(s, 1, blocking, {});
    const std::size_t warm_connections = server.connections();

    // Per way: every round's p50/p90 (small), total and per-event (burst),
    // p50/p99 delivery (paced).
    std::vector<double> small_p50[3], small_p90[3], small_p99[3], burst_us[3], burst_chunks[3],
        paced_p50[3], paced_p90[3], paced_p99[3], paced_chunks[3];
    std::vector<double> timer_p50[3], timer_p99[3], timer_max[3], timer_total[3];
    std::size_t opened[3] = {0, 0, 0};

    for (int round = 0; round < options.rounds; ++round) {
      std::printf("\nround %d (load average %s)\n", round + 1, load_average().c_str());
      for (int k = 0; k < 3; ++k) {
        const int way = (round + k) % 3;
        const std::size_t before = server.connections();
        const loopr::bench::SampleStats small = loopr::bench::stats_of(small_requests(s, way));
        std::vector<double> bursts;
        StreamFigures burst;
        for (int b = 0; b < options.bursts; ++b) {
          burst = one_stream(s, way, 0);
          bursts.push_back(burst.total_us);
        }
        burst.total_us = median_of(bursts);
        const StreamFigures paced = one_stream(s, way, options.gap_us);
        opened[way] += server.connections() - before;
        const auto w = static_cast<std::size_t>(way);
        small_p50[w].push_back(small.p50);
        small_p90[w].push_back(small.p90);
        small_p99[w].push_back(small.p99);
        burst_us[w].push_back(burst.total_us);
        burst_chunks[w].push_back(static_cast<double>(burst.chunks));
        const loopr::bench::SampleStats pst = loopr::bench::stats_of(paced.latencies_us);
        paced_p50[w].push_back(pst.p50);
        paced_p90[w].push_back(pst.p90);
        paced_p99[w].push_back(pst.p99);
        paced_chunks[w].push_back(static_cast<double>(paced.chunks));
        std::printf("  %s\n", kWays[way]);
        print_stats("small request latency", small);
        std::printf("  %-36s %.0f us for %zu events in %zu chunks (%.2f us/event)\n",
                    "burst stream (median)", burst.total_us, options.events, burst.chunks,
                    burst.total_us / static_cast<double>(options.events));
        char extra[64];
        std::snprintf(extra, sizeof extra, "  (%zu chunks)", paced.chunks);
        print_stats("paced stream, event delivery", pst, extra);
      }
      // The timer: HttpClient and blocking alternate first; idle last, as long
      // as HttpClient's run took.
      TimerFigures timer[3];
      const int first = round % 2;
      timer[first] = timer_lateness(s, first, blocking, {});
      timer[1 - first] = timer_lateness(s, 1 - first, blocking, {});
      timer[2] = timer_lateness(
          s, 2, blocking, std::chrono::microseconds(static_cast<std::int64_t>(timer[0].total_us)));
      const char* labels[3] = {"timer lateness, HttpClient", "timer lateness, easy on io thread",
                               "timer lateness, no streams"};
      for (std::size_t w = 0; w < 3; ++w) {
        const loopr::bench::SampleStats st = loopr::bench::stats_of(timer[w].lateness_us);
        timer_p50[w].push_back(st.p50);
        timer_p99[w].push_back(st.p99);
        timer_max[w].push_back(st.max);
        timer_total[w].push_back(timer[w].total_us);
        char extra[64];
        std::snprintf(extra, sizeof extra, "  (run %.0f ms)", timer[w].total_us / 1000.0);
        print_stats(labels[w], st, extra);
      }
    }

    std::printf(
        "\nconnections: %zu opened in warm-up; while measured: %zu HttpClient, %zu easy "
        "reused, %zu easy new handle\n",
        warm_connections, opened[0], opened[1], opened[2]);
    std::printf("\nmedians over %d rounds (load average at end %s), microseconds:\n",
                options.rounds, load_average().c_str());
    std::printf("  %-34s %10s %10s %10s %10s %10s %9s %9s %9s\n", "way", "small p50", "p90", "p99",
                "burst", "us/event", "paced p50", "p90", "p99");
    for (std::size_t w = 0; w < 3; ++w) {
      const double burst = median_of(burst_us[w]);
      std::printf("  %-34s %10.1f %10.1f %10.1f %10.0f %10.2f %9.1f %9.1f %9.1f\n", kWays[w],
                  median_of(small_p50[w]), median_of(small_p90[w]), median_of(small_p99[w]), burst,
                  burst / static_cast<double>(options.events), median_of(paced_p50[w]),
                  median_of(paced_p90[w]), median_of(paced_p99[w]));
    }
    std::printf("  chunks delivered (median): burst %.0f / %.0f / %.0f, paced %.0f / %.0f / %.0f\n",
                median_of(burst_chunks[0]), median_of(burst_chunks[1]), median_of(burst_chunks[2]),
                median_of(paced_chunks[0]), median_of(paced_chunks[1]), median_of(paced_chunks[2]));
    std::printf(
        "  HttpClient - easy reused: small p50 %+.1f us; burst %+.2f us/event; paced p50 "
        "%+.1f us/event\n",
        median_of(small_p50[0]) - median_of(small_p50[1]),
        (median_of(burst_us[0]) - median_of(burst_us[1])) / static_cast<double>(options.events),
        median_of(paced_p50[0]) - median_of(paced_p50[1]));
    const char* tlabels[3] = {"HttpClient", "curl_easy_perform on the io thread", "no streams"};
    std::printf("  %-34s %10s %10s %10s %10s\n", "1 ms timer lateness", "p50", "p99", "max",
                "run ms");
    for (std::size_t w = 0; w < 3; ++w) {
      std::printf("  %-34s %10.1f %10.1f %10.1f %10.0f\n", tlabels[w], median_of(timer_p50[w]),
                  median_of(timer_p99[w]), median_of(timer_max[w]),
                  median_of(timer_total[w]) / 1000.0);
    }
  } catch (const std::exception& e) {
    std::cerr << "http_transport_bench: " << e.what() << "\n";
    return 1;
  }
  curl_global_cleanup();
  return 0;
}
