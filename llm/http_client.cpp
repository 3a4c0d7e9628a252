// HttpClient over libcurl: one worker thread running a curl multi handle,
// instead of curl's sockets driven by asio.
//
// curl's docs/examples/asiohiper.cpp shows the other way: the multi handle's
// socket and timer callbacks (CURLMOPT_SOCKETFUNCTION, CURLMOPT_TIMERFUNCTION)
// are handed to asio and curl_multi_socket_action runs on the io thread, with
// no thread of its own. We chose a worker thread that loops on
// curl_multi_poll, woken by curl_multi_wakeup, because:
//  - it is simpler: the worker is one plain loop (take new requests and
//    cancels, perform, read finished transfers, check our own timeouts, poll);
//    there is no per-socket bookkeeping and no re-entry into curl from asio
//    handlers;
//  - no file descriptor is owned by two libraries: in the asio-driven design
//    asio wraps sockets curl opens and closes (CURLOPT_OPENSOCKETFUNCTION /
//    CLOSESOCKETFUNCTION), and a socket closed by one behind the other's back
//    is a double close or a poll on a reused fd. Here curl alone owns its
//    sockets, and asio never sees them;
//  - TLS handshakes, decryption, DNS and curl's connection cache stay off the
//    io thread, so a slow handshake never delays looprd's other sessions.
// The cost: one thread per HttpClient (looprd has one client), and one post to
// the io_context per body chunk curl hands us (an allocation and a lock),
// which at the rate models stream tokens is noise.
// Measured: bench/README.md, "LLM HTTP transport" (bench/http_transport_bench.cpp).
//
// Ownership across the two threads: a Transfer (curl easy handle, request,
// timestamps) lives on the worker only. An ExchangeImpl (the items waiting for
// the coroutine, a timer) lives on the io thread only; the worker holds a
// shared_ptr to it but never touches it, and hands that reference back through
// a post so the last reference is always dropped on the io thread (the
// exchange's timer belongs to the io_context). The only state both threads
// touch is Control, under its mutex.
#include "llm/http_client.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/this_coro.hpp>
#include <asio/use_awaitable.hpp>
#include <cctype>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <variant>

#include "common/ascii_text.hpp"

namespace loopr::llm {
namespace {

using Clock = std::chrono::steady_clock;

// The code of the Error a cancelled (or shut down) exchange returns.
constexpr const char* kCancelled = "cancelled";
// The longest the worker sleeps without a reason to wake (a safety net: every
// event that needs it earlier wakes it).
constexpr std::chrono::milliseconds kMaxPoll{1000};

void init_curl_once() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK) {
    throw StartupError(std::string("libcurl cannot be initialised: ") + curl_easy_strerror(result));
  }
}

// RFC 9110 token characters: what a method or a header name may hold.
bool is_token(std::string_view text) {
  if (text.empty()) return false;
  constexpr std::string_view kSpecials = "!#$%&'*+-.^_`|~";
  return std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           kSpecials.find(c) != std::string_view::npos;
  });
}

// Checks what start() can check without curl. Messages name a header by its
// name, never by its value.
std::optional<Error> validate(const HttpRequest& request) {
  const std::string scheme = ascii_lower(request.url.substr(0, request.url.find("://") + 3));
  if (scheme != "http://" && scheme != "https://") {
    return make_error(loopr::errc::invalid_arguments, "the request URL is not http:// or https://",
                      "check the provider's base URL");
  }
  if (!is_token(request.method)) {
    return make_error(loopr::errc::invalid_arguments, "the request method is not an HTTP token");
  }
  for (std::size_t i = 0; i < request.headers.size(); ++i) {
    const auto& [name, value] = request.headers[i];
    if (!is_token(name)) {
      return make_error(loopr::errc::invalid_arguments,
                        "request header #" + std::to_string(i + 1) + " has an invalid name");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return make_error(
          loopr::errc::invalid_arguments,
          "the value of request header '" + name + "' holds a line break or NUL (value not shown)",
          "remove line breaks from the configured value");
    }
  }
  return std::nullopt;
}

struct End {};
// What the worker hands the io thread, in order: the head, body chunks, then
// End or an Error (the last item, which stays queued).
using Item = std::variant<HttpHead, std::string, End, Error>;

struct Transfer;

// The state both threads share. Exchanges hold it weakly: an exchange may
// outlive its client.
struct Control {
  std::mutex mutex;
  std::deque<std::unique_ptr<Transfer>> queued;  // capped: kMaxQueuedRequests
  std::vector<std::uint64_t> cancels;            // exchange ids to abort
  bool stopping = false;
  CURLM* multi = nullptr;  // for curl_multi_wakeup; null once cleaned up

  // Caller holds mutex.
  void wake() {
    if (multi != nullptr) curl_multi_wakeup(multi);
  }
};

// One exchange as the io thread sees it. Threads: io thread only.
class ExchangeImpl final : public HttpExchange {
 public:
  ExchangeImpl(asio::io_context& io, std::uint64_t id, std::weak_ptr<Control> control)
      : wake_(io, Clock::time_point::max()), id_(id), control_(std::move(control)) {}

  std::uint64_t id() const { return id_; }

  asio::awaitable<Result<HttpHead>> head() override {
    co_await wait_for_item();
    Item& front = items_.front();
    if (auto* head = std::get_if<HttpHead>(&front)) {
      HttpHead taken = std::move(*head);
      items_.pop_front();
      co_return taken;
    }
    if (auto* error = std::get_if<Error>(&front)) co_return *error;
    co_return make_error(loopr::errc::internal, "head() was already called for this HTTP exchange");
  }

  asio::awaitable<Result<std::optional<std::string>>> next_chunk() override {
    for (;;) {
      co_await wait_for_item();
      Item& front = items_.front();
      if (std::holds_alternative<HttpHead>(front)) {  // the caller skipped head()
        items_.pop_front();
        continue;
      }
      if (auto* chunk = std::get_if<std::string>(&front)) {
        std::string taken = std::move(*chunk);
        items_.pop_front();
        co_return std::optional<std::string>(std::move(taken));
      }
      if (auto* error = std::get_if<Error>(&front)) co_return *error;
      co_return std::optional<std::string>();  // End stays queued: every later call sees it
    }
  }

  void cancel() override {
    if (finished_) return;
    items_.clear();
    deliver(make_error(kCancelled, "the HTTP request was cancelled"));
    if (auto control = control_.lock()) {
      std::lock_guard lock(control->mutex);
      control->cancels.push_back(id_);
      control->wake();
    }
  }

  // An item from the worker (or from start()). After End or an Error, or
  // after cancel(), nothing more is accepted.
  void deliver(Item item) {
    if (finished_) return;
    finished_ = std::holds_alternative<End>(item) || std::holds_alternative<Error>(item);
    items_.push_back(std::move(item));
    wake_.cancel();
  }

 private:
  // Returns once an item is queued. One waiter at a time. If the waiting
  // coroutine is cancelled (asio per-operation cancellation, e.g. a timeout
  // raced with `||`), the exchange is cancelled.
  asio::awaitable<void> wait_for_item() {
    while (items_.empty()) {
      wake_.expires_at(Clock::time_point::max());
      std::error_code ignored;
      co_await wake_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
      if (items_.empty()) {
        const asio::cancellation_state state = co_await asio::this_coro::cancellation_state;
        if (state.cancelled() != asio::cancellation_type::none) cancel();
      }
    }
  }

  asio::steady_timer wake_;  // never expires by itself: deliver() cancels it
  std::uint64_t id_;
  std::weak_ptr<Control> control_;
  std::deque<Item> items_;
  bool finished_ = false;
};

// One transfer as the worker sees it. Threads: worker only (start() fills it
// on the io thread before it is queued).
struct Transfer {
  Transfer(asio::io_context& context, std::shared_ptr<ExchangeImpl> ex, HttpRequest req)
      : io(&context), exchange(std::move(ex)), request(std::move(req)) {}
  ~Transfer() {
    if (easy != nullptr) curl_easy_cleanup(easy);  // after curl_multi_remove_handle
    curl_slist_free_all(headers);
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  // Hands an item to the exchange, on the io thread.
  void post(Item item) {
    asio::post(*io, [exchange = exchange, item = std::move(item)]() mutable {
      exchange->deliver(std::move(item));
    });
  }
  // The last post: it carries the worker's reference to the exchange, so the
  // exchange is never destroyed on the worker.
  void post_last(Item item) {
    asio::post(*io, [exchange = std::move(exchange), item = std::move(item)]() mutable {
      exchange->deliver(std::move(item));
    });
  }
  // Gives the reference back without an item (the exchange already knows).
  void release() {
    asio::post(*io, [exchange = std::move(exchange)] {});
  }

  asio::io_context* io;
  std::shared_ptr<ExchangeImpl> exchange;
  HttpRequest request;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {};
  bool sent = false;  // the connection is up and the request is going out
  Clock::time_point sent_at;
  bool head_done = false;
  Clock::time_point last_byte_at;  // the head's end, then each body chunk
  std::size_t body_bytes = 0;
  HttpHead head;                 // being built from header lines
  std::optional<Error> failure;  // why a callback aborted the transfer
};

// --- curl callbacks (worker thread, inside curl_multi_perform) -----------

int on_request_ready(void* data, char*, char*, int, int) {
  auto* transfer = static_cast<Transfer*>(data);
  transfer->sent = true;
  transfer->sent_at = Clock::now();
  return CURL_PREREQFUNC_OK;
}

std::size_t on_header(char* buffer, std::size_t size, std::size_t count, void* data) {
  auto* transfer = static_cast<Transfer*>(data);
  const std::size_t length = size * count;
  if (transfer->head_done) return length;  // trailers: not part of the head
  const std::string_view line = trim_space(std::string_view(buffer, length));
  if (line.starts_with("HTTP/")) {  // a status line: a new head begins
    transfer->head.headers.clear();
    return length;
  }
  if (line.empty()) {
    long status = 0;
    curl_easy_getinfo(transfer->easy, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 100 && status < 200) {  // an interim head (100 Continue): wait for the real one
      transfer->head.headers.clear();
      return length;
    }
    transfer->head.status = status;
    transfer->head_done = true;
    transfer->last_byte_at = Clock::now();
    transfer->post(std::move(transfer->head));
    return length;
  }
  const std::size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    transfer->head.headers[ascii_lower(trim_space(line.substr(0, colon)))] =
        std::string(trim_space(line.substr(colon + 1)));
  }
  return length;
}

std::size_t on_body(char* bytes, std::size_t size, std::size_t count, void* data) {
  auto* transfer = static_cast<Transfer*>(data);
  const std::size_t length = size * count;
  if (length == 0) return 0;
  if (length > transfer->request.max_response_bytes - transfer->body_bytes) {
    transfer->failure =
        make_error(loopr::errc::too_large,
                   "the response body is larger than " +
                       std::to_string(transfer->request.max_response_bytes) + " bytes",
                   "ask for a shorter answer (max_tokens) or raise the response cap");
    return CURL_WRITEFUNC_ERROR;
  }
  transfer->body_bytes += length;
  transfer->last_byte_at = Clock::now();
  transfer->post(std::string(bytes, length));
  return length;
}

long to_ms(std::chrono::milliseconds duration) {
  return static_cast<long>(std::max<std::chrono::milliseconds::rep>(duration.count(), 1));
}

std::string describe(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

}  // namespace

// --- the worker -----------------------------------------------------------

struct HttpClient::Worker {
  Worker(asio::io_context& context, CURLM* multi_handle)
      : io(context), control(std::make_shared<Control>()), multi(multi_handle) {
    control->multi = multi;
  }

  void run();
  // Sets up curl for a new transfer and adds it; a failure ends the exchange.
  void begin(std::unique_ptr<Transfer> transfer);
  std::optional<Error> configure(Transfer& transfer);
  // Removes the transfer from curl and ends its exchange with `last`.
  void finish(std::uint64_t id, std::optional<Item> last);
  Item outcome(Transfer& transfer, CURLcode code);
  void check_timeouts(Clock::time_point now);
  int poll_timeout_ms(Clock::time_point now) const;

  // Set at construction, then read-only.
  asio::io_context& io;
  std::shared_ptr<Control> control;
  CURLM* multi;
  std::thread thread;
  // io thread only.
  std::uint64_t next_id = 0;
  // Worker thread only.
  std::map<std::uint64_t, std::unique_ptr<Transfer>> active;
};

void HttpClient::Worker::run() {
  for (;;) {
    std::deque<std::unique_ptr<Transfer>> fresh;
    std::vector<std::uint64_t> cancels;
    bool stopping = false;
    {
      std::lock_guard lock(control->mutex);
      fresh.swap(control->queued);
      cancels.swap(control->cancels);
      stopping = control->stopping;
    }
    if (stopping) {
      const Error shut_down = make_error(kCancelled, "the HTTP client was shut down");
      for (auto& transfer : fresh)
        transfer->post_last(shut_down);
      while (!active.empty())
        finish(active.begin()->first, shut_down);
      return;
    }
    for (auto& transfer : fresh) {
      const std::uint64_t id = transfer->exchange->id();
      if (std::find(cancels.begin(), cancels.end(), id) != cancels.end()) {
        transfer->release();
      } else {
        begin(std::move(transfer));
      }
    }
    for (const std::uint64_t id : cancels) {
      if (active.contains(id)) finish(id, std::nullopt);
    }

    int running = 0;
    curl_multi_perform(multi, &running);
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      char* private_data = nullptr;
      curl_easy_getinfo(message->easy_handle, CURLINFO_PRIVATE, &private_data);
      auto* transfer = reinterpret_cast<Transfer*>(private_data);
      const CURLcode code = message->data.result;  // `message` dies with remove_handle
      finish(transfer->exchange->id(), outcome(*transfer, code));
    }
    const Clock::time_point now = Clock::now();
    check_timeouts(now);
    curl_multi_poll(multi, nullptr, 0, poll_timeout_ms(now), nullptr);
  }
}

void HttpClient::Worker::begin(std::unique_ptr<Transfer> transfer) {
  if (std::optional<Error> error = configure(*transfer)) {
    transfer->post_last(std::move(*error));
    return;
  }
  if (const CURLMcode code = curl_multi_add_handle(multi, transfer->easy); code != CURLM_OK) {
    transfer->post_last(make_error(
        loopr::errc::internal, std::string("curl_multi_add_handle: ") + curl_multi_strerror(code)));
    return;
  }
  const std::uint64_t id = transfer->exchange->id();
  active.emplace(id, std::move(transfer));
}

std::optional<Error> HttpClient::Worker::configure(Transfer& transfer) {
  transfer.easy = curl_easy_init();
  if (transfer.easy == nullptr) return make_error(loopr::errc::internal, "curl_easy_init failed");
  const HttpRequest& request = transfer.request;
  CURL* easy = transfer.easy;
  CURLcode code = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    if (code == CURLE_OK) code = curl_easy_setopt(easy, option, value);
  };
  set(CURLOPT_PRIVATE, static_cast<void*>(&transfer));
  set(CURLOPT_ERRORBUFFER, transfer.error_buffer);
  set(CURLOPT_URL, request.url.c_str());
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_PROXY, "");  // never a proxy from the environment
  set(CURLOPT_PROTOCOLS_STR, "http,https");
  set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_CONNECTTIMEOUT_MS, to_ms(request.connect_timeout));
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_PREREQFUNCTION, &on_request_ready);
  set(CURLOPT_PREREQDATA, static_cast<void*>(&transfer));
  set(CURLOPT_HEADERFUNCTION, &on_header);
  set(CURLOPT_HEADERDATA, static_cast<void*>(&transfer));
  set(CURLOPT_WRITEFUNCTION, &on_body);
  set(CURLOPT_WRITEDATA, static_cast<void*>(&transfer));
  if (request.method == "GET" && request.body.empty()) {
    set(CURLOPT_HTTPGET, 1L);
  } else if (request.method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else {
    // The body is sent as given, from the request this Transfer owns.
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_POSTFIELDS, request.body.data());
    if (request.method != "POST") set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  bool has_expect = false;
  for (const auto& [name, value] : request.headers) {
    has_expect = has_expect || ascii_lower(name) == "expect";
    // "Name:" would make curl drop the header; "Name;" sends it empty.
    const std::string line = value.empty() ? name + ";" : name + ": " + value;
    curl_slist* appended = curl_slist_append(transfer.headers, line.c_str());
    if (appended == nullptr) return make_error(loopr::errc::internal, "curl_slist_append failed");
    transfer.headers = appended;
  }
  if (!has_expect) {
    // No "Expect: 100-continue" round trip before a large body.
    curl_slist* appended = curl_slist_append(transfer.headers, "Expect:");
    if (appended == nullptr) return make_error(loopr::errc::internal, "curl_slist_append failed");
    transfer.headers = appended;
  }
  set(CURLOPT_HTTPHEADER, transfer.headers);
  if (code != CURLE_OK) {
    return make_error(loopr::errc::internal, std::string("the HTTP request cannot be set up: ") +
                                                 curl_easy_strerror(code));
  }
  return std::nullopt;
}

Item HttpClient::Worker::outcome(Transfer& transfer, CURLcode code) {
  if (transfer.failure) return std::move(*transfer.failure);
  if (code == CURLE_OK) {
    if (transfer.head_done) return End{};
    return make_error(loopr::errc::protocol, "the HTTP response ended before its head");
  }
  // curl's own words (never a header value), or its generic text.
  const std::string words =
      transfer.error_buffer[0] != '\0' ? transfer.error_buffer : curl_easy_strerror(code);
  Error error;
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      error = make_error(loopr::errc::timeout,
                         "connect timeout: no connection within " +
                             describe(transfer.request.connect_timeout) + " (" + words + ")",
                         "check the network and the provider's base URL, then retry");
      break;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      error = make_error(loopr::errc::invalid_arguments, "the request URL cannot be used: " + words,
                         "check the provider's base URL");
      break;
    default:
      error = make_error(loopr::errc::io, "the HTTP request failed: " + words,
                         "a network or server problem; the request may be retried");
      break;
  }
  error.details = {{"curl_code", static_cast<int>(code)}};
  return error;
}

void HttpClient::Worker::finish(std::uint64_t id, std::optional<Item> last) {
  auto it = active.find(id);
  if (it == active.end()) return;
  std::unique_ptr<Transfer> transfer = std::move(it->second);
  active.erase(it);
  curl_multi_remove_handle(multi, transfer->easy);
  if (last) {
    transfer->post_last(std::move(*last));
  } else {
    transfer->release();
  }
}

void HttpClient::Worker::check_timeouts(Clock::time_point now) {
  std::vector<std::pair<std::uint64_t, Error>> expired;
  for (const auto& [id, transfer] : active) {
    const HttpRequest& request = transfer->request;
    if (!transfer->head_done && transfer->sent &&
        now - transfer->sent_at >= request.first_byte_timeout) {
      expired.emplace_back(
          id, make_error(loopr::errc::timeout,
                         "first-byte timeout: no response head within " +
                             describe(request.first_byte_timeout) + " of sending the request",
                         "the provider is slow or overloaded; retry later"));
    } else if (transfer->head_done && now - transfer->last_byte_at >= request.idle_timeout) {
      expired.emplace_back(id, make_error(loopr::errc::timeout,
                                          "idle timeout: no response bytes for " +
                                              describe(request.idle_timeout) + " mid-stream",
                                          "the stream stalled; retry the request"));
    }
  }
  for (auto& [id, error] : expired)
    finish(id, std::move(error));
}

int HttpClient::Worker::poll_timeout_ms(Clock::time_point now) const {
  Clock::duration wait = kMaxPoll;
  for (const auto& [id, transfer] : active) {
    if (!transfer->head_done && transfer->sent) {
      wait = std::min(wait, transfer->sent_at + transfer->request.first_byte_timeout - now);
    } else if (transfer->head_done) {
      wait = std::min(wait, transfer->last_byte_at + transfer->request.idle_timeout - now);
    }
  }
  // Rounded up, so the worker does not spin through the last fraction of a ms.
  const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  return static_cast<int>(std::max<std::chrono::milliseconds::rep>(ms, 0));
}

// --- HttpClient -----------------------------------------------------------

HttpClient::HttpClient(asio::io_context& io) {
  init_curl_once();
  CURLM* multi = curl_multi_init();
  if (multi == nullptr) throw StartupError("libcurl cannot create a multi handle");
  worker_ = std::make_unique<Worker>(io, multi);
  try {
    worker_->thread = std::thread([worker = worker_.get()] { worker->run(); });
  } catch (const std::system_error& e) {
    curl_multi_cleanup(multi);
    throw StartupError(std::string("cannot start the HTTP worker thread: ") + e.what());
  }
}

HttpClient::~HttpClient() {
  {
    std::lock_guard lock(worker_->control->mutex);
    worker_->control->stopping = true;
    worker_->control->wake();
  }
  worker_->thread.join();
  {
    std::lock_guard lock(worker_->control->mutex);
    worker_->control->multi = nullptr;
  }
  curl_multi_cleanup(worker_->multi);
}

std::shared_ptr<HttpExchange> HttpClient::start(HttpRequest request) {
  auto exchange = std::make_shared<ExchangeImpl>(worker_->io, ++worker_->next_id,
                                                 std::weak_ptr<Control>(worker_->control));
  if (std::optional<Error> error = validate(request)) {
    exchange->deliver(std::move(*error));
    return exchange;
  }
  auto transfer = std::make_unique<Transfer>(worker_->io, exchange, std::move(request));
  {
    std::lock_guard lock(worker_->control->mutex);
    if (worker_->control->queued.size() < kMaxQueuedRequests) {
      worker_->control->queued.push_back(std::move(transfer));
      worker_->control->wake();
      return exchange;
    }
  }
  exchange->deliver(
      make_error(loopr::errc::io,
                 "too many HTTP requests are waiting (" + std::to_string(kMaxQueuedRequests) + ")",
                 "retry later"));
  return exchange;
}

asio::awaitable<Result<std::pair<HttpHead, std::string>>> HttpClient::fetch(HttpRequest request) {
  const std::shared_ptr<HttpExchange> exchange = start(std::move(request));
  Result<HttpHead> head = co_await exchange->head();
  if (!head) co_return std::move(head).error();
  std::string body;
  for (;;) {
    Result<std::optional<std::string>> chunk = co_await exchange->next_chunk();
    if (!chunk) co_return std::move(chunk).error();
    if (!chunk->has_value()) break;
    body += **chunk;
  }
  co_return std::pair<HttpHead, std::string>(std::move(*head), std::move(body));
}

}  // namespace loopr::llm
