#include "client/control_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "client/failure.hpp"

namespace loopr::client {
namespace {

using nlohmann::json;

constexpr std::size_t kReadChunkBytes = 64 * 1024;
constexpr const char* kLogHint =
    "looprd may have stopped or restarted; see looprd.log in its state folder, or restart it: "
    "looprctl daemon stop && looprctl daemon start";

Error unreachable(std::string message, std::string hint) {
  return make_error(failure::daemon_unreachable, std::move(message), std::move(hint));
}

Error protocol_error(std::string message) {
  return make_error(errc::protocol, std::move(message),
                    "looprctl and looprd disagree about the control protocol; use the looprctl "
                    "that was built with this looprd");
}

std::string describe_errno(int err) {
  return std::strerror(err);
}

Error connect_error(int err, const std::string& path, Milliseconds timeout) {
  switch (err) {
    case ENOENT:
    case ECONNREFUSED:
      return unreachable(
          "looprd is not running: nothing answers on " + path + " (" + describe_errno(err) + ")",
          start_hint());
    case EAGAIN:
      return unreachable("looprd at " + path + " did not accept the connection within " +
                             std::to_string(timeout.count()) + " ms",
                         "it may be overloaded or hung; see looprd.log in its state folder");
    case EACCES:
    case EPERM:
      return unreachable("cannot connect to " + path + ": " + describe_errno(err),
                         "the socket belongs to another user or its folder is not accessible; "
                         "pass --socket or set LOOPR_SOCKET to your own daemon's socket");
    default:
      return unreachable("cannot connect to " + path + ": " + describe_errno(err), start_hint());
  }
}

timeval to_timeval(Milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout.count() % 1000) * 1000);
  return tv;
}

Result<UniqueFd> connect_socket(const std::string& path, Milliseconds timeout) {
  sockaddr_un address{};
  if (path.empty() || path.size() >= sizeof address.sun_path) {
    return make_error(failure::usage,
                      "the socket path '" + path + "' is empty or longer than " +
                          std::to_string(sizeof address.sun_path - 1) + " bytes",
                      "pass a shorter path with --socket");
  }
  address.sun_family = AF_UNIX;
  path.copy(address.sun_path, path.size());

  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return errno_error(errno, "socket", path);
  // A blocking connect() on a Unix socket whose backlog is full waits for
  // room for at most SO_SNDTIMEO, then fails with EAGAIN: that is the connect
  // timeout. The socket is made non-blocking once connected.
  const timeval limit = to_timeval(timeout);
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit) != 0) {
    return errno_error(errno, "setsockopt(SO_SNDTIMEO)", path);
  }
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return connect_error(errno, path, timeout);
  }
  const timeval none{};
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none) != 0 || flags < 0 ||
      ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    return errno_error(errno, "fcntl(O_NONBLOCK)", path);
  }
  return fd;
}

// poll()'s timeout until `deadline`: -1 without one, else the milliseconds
// left rounded up (0 once it has passed).
int poll_timeout(const std::optional<std::chrono::steady_clock::time_point>& deadline) {
  if (!deadline) return -1;
  const auto left = *deadline - std::chrono::steady_clock::now();
  if (left <= std::chrono::steady_clock::duration::zero()) return 0;
  const auto ms = std::chrono::ceil<Milliseconds>(left).count();
  return ms > INT_MAX ? INT_MAX : static_cast<int>(ms);
}

// The daemon's protocol version, if its 1004 error data states one (as
// "protocol" or "supported", at the top or under "details").
std::optional<std::int64_t> stated_version(const json& data) {
  const auto find_in = [](const json& object) -> std::optional<std::int64_t> {
    if (!object.is_object()) return std::nullopt;
    for (const char* key : {"protocol", "supported"}) {
      const auto it = object.find(key);
      if (it != object.end() && it->is_number_integer()) return it->get<std::int64_t>();
    }
    return std::nullopt;
  };
  if (auto version = find_in(data)) return version;
  if (data.is_object() && data.contains("details")) return find_in(data.at("details"));
  return std::nullopt;
}

std::string rpc_hint(const json& data) {
  if (data.is_object()) {
    const auto it = data.find("hint");
    if (it != data.end() && it->is_string()) return it->get<std::string>();
  }
  return {};
}

Error rpc_failure(const std::string& method, const proto::ControlError& error) {
  Error out = make_error(failure::rpc_error, error.message, rpc_hint(error.data));
  out.details = {{"rpc_code", error.code}, {"method", method}, {"data", error.data}};
  return out;
}

}  // namespace

std::string start_hint() {
  return "start it with: looprctl daemon start";
}

ControlClient::ControlClient(UniqueFd fd, std::string socket_path, ClientTimeouts timeouts)
    : fd_(std::move(fd)), socket_path_(std::move(socket_path)), timeouts_(timeouts) {}

Result<ControlClient> ControlClient::connect(const std::string& socket_path,
                                             const ClientTimeouts& timeouts) {
  auto fd = connect_socket(socket_path, timeouts.connect);
  if (!fd) return std::move(fd).error();
  return ControlClient(std::move(*fd), socket_path, timeouts);
}

Result<ControlClient> ControlClient::open(const std::string& socket_path,
                                          const ClientTimeouts& timeouts) {
  auto client = connect(socket_path, timeouts);
  if (!client) return client;
  auto session = client->initialize();
  if (!session) return std::move(session).error();
  return client;
}

Result<proto::InitializeResult> ControlClient::initialize() {
  const proto::InitializeParams params{std::string(kClientName), proto::kProtocolVersion};
  auto reply = call("initialize", proto::to_json(params));
  const std::string ours = std::to_string(proto::kProtocolVersion);
  const std::string restart_hint =
      "use the looprctl built with this looprd, or restart looprd from this build: "
      "looprctl daemon stop && looprctl daemon start";
  if (!reply) {
    const Error& error = reply.error();
    const bool mismatch = error.code == failure::rpc_error &&
                          error.details.value("rpc_code", 0) ==
                              static_cast<int>(proto::ControlErrorCode::version_mismatch);
    if (!mismatch) return std::move(reply).error();
    const auto theirs = stated_version(error.details.at("data"));
    return make_error(failure::version_mismatch,
                      "protocol version mismatch: looprctl speaks control protocol version " +
                          ours + ", looprd speaks " +
                          (theirs ? "version " + std::to_string(*theirs)
                                  : "another version (not stated in its reply)") +
                          " (looprd said: " + error.message + ")",
                      restart_hint);
  }
  auto parsed = proto::parse_initialize_result(*reply);
  if (!parsed) return protocol_error("malformed initialize reply: " + parsed.error().message);
  if (parsed->protocol != proto::kProtocolVersion) {
    return make_error(failure::version_mismatch,
                      "protocol version mismatch: looprctl speaks control protocol version " +
                          ours + ", looprd " + parsed->daemon_version + " speaks version " +
                          std::to_string(parsed->protocol),
                      restart_hint);
  }
  session_ = *parsed;
  return std::move(parsed).value();
}

ControlClient::Deadline ControlClient::deadline_after(std::optional<Milliseconds> timeout) const {
  const Milliseconds wait = timeout.value_or(timeouts_.reply);
  if (wait == Milliseconds::max()) return std::nullopt;
  return Clock::now() + wait;
}

Result<nlohmann::json> ControlClient::call(const std::string& method, nlohmann::json params,
                                           std::optional<Milliseconds> timeout) {
  return call(method, std::move(params), timeout, nullptr);
}

void ControlClient::abort() const {
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

Result<nlohmann::json> ControlClient::call(const std::string& method, nlohmann::json params,
                                           std::optional<Milliseconds> timeout,
                                           const EventHandler& on_event) {
  const Deadline deadline = deadline_after(timeout);
  const proto::Request request{next_id_++, method, std::move(params)};
  if (auto sent = send_request(request, deadline); !sent) return std::move(sent).error();
  const std::string waiting_for = "the reply to " + method;
  while (true) {
    auto message = receive(deadline, waiting_for);
    if (!message) return std::move(message).error();
    if (auto* event = std::get_if<proto::Event>(&*message)) {
      if (on_event) {
        on_event(*event);
      } else {
        queue_event(std::move(*event));
      }
      continue;
    }
    auto& response = std::get<proto::Response>(*message);
    // A reply with a null id answers a request looprd could not read: the
    // only one outstanding is ours. Other ids belong to no pending request.
    if (response.id && *response.id != request.id) continue;
    if (auto* error = std::get_if<proto::ControlError>(&response.body)) {
      return rpc_failure(method, *error);
    }
    if (!response.id) return protocol_error("looprd answered " + method + " with a null id");
    return std::get<nlohmann::json>(std::move(response.body));
  }
}

Result<std::optional<proto::Event>> ControlClient::next_event(Milliseconds timeout) {
  if (!events_.empty()) {
    proto::Event event = std::move(events_.front());
    events_.pop_front();
    return std::optional<proto::Event>(std::move(event));
  }
  const Deadline deadline = deadline_after(timeout);
  while (true) {
    auto message = receive(deadline, "events");
    if (!message) {
      if (message.error().code == errc::timeout) return std::optional<proto::Event>{};
      return std::move(message).error();
    }
    if (auto* event = std::get_if<proto::Event>(&*message)) {
      return std::optional<proto::Event>(std::move(*event));
    }
    // A stray reply while only events are expected: nothing waits for it.
  }
}

void ControlClient::queue_event(proto::Event event) {
  if (events_.size() >= kMaxQueuedEvents) {
    events_.pop_front();
    ++dropped_events_;
  }
  events_.push_back(std::move(event));
}

Error ControlClient::closed_error(std::string_view waiting_for) const {
  return unreachable("looprd closed the connection on " + socket_path_ +
                         " while looprctl waited for " + std::string(waiting_for),
                     kLogHint);
}

Result<void> ControlClient::send_request(const proto::Request& request, Deadline deadline) {
  auto line = proto::encode_line(proto::to_json(request));
  if (!line) {
    return make_error(failure::usage, "cannot send " + request.method + ": " + line.error().message,
                      line.error().hint);
  }
  std::string_view rest = *line;
  while (!rest.empty()) {
    const ssize_t n = ::send(fd_.get(), rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EPIPE || err == ECONNRESET)
      return closed_error("a chance to send " + request.method);
    if (err != EAGAIN && err != EWOULDBLOCK) {
      return unreachable("cannot send " + request.method + " to looprd on " + socket_path_ + ": " +
                             describe_errno(err),
                         kLogHint);
    }
    pollfd waiting{fd_.get(), POLLOUT, 0};
    const int ready = ::poll(&waiting, 1, poll_timeout(deadline));
    if (ready < 0 && errno != EINTR) return errno_error(errno, "poll", socket_path_);
    if (ready == 0) {
      return make_error(
          errc::timeout,
          "looprd on " + socket_path_ + " did not take the " + request.method + " request in time",
          kLogHint);
    }
  }
  return {};
}

Result<ControlClient::Message> ControlClient::receive(Deadline deadline,
                                                      std::string_view waiting_for) {
  while (true) {
    auto line = reader_.next();
    if (!line) {
      const Error& error = line.error();
      if (error.code == errc::too_large) {
        return protocol_error("looprd sent a line over the " +
                              std::to_string(proto::kMaxLineBytes) + "-byte cap");
      }
      return protocol_error("looprd sent a line that is not JSON: " + error.message);
    }
    if (*line) {
      auto message = proto::parse_server_message(**line);
      if (!message) return protocol_error("looprd sent " + message.error().message);
      return std::move(message).value();
    }
    if (auto filled = fill(deadline, waiting_for); !filled) return std::move(filled).error();
  }
}

Result<void> ControlClient::fill(Deadline deadline, std::string_view waiting_for) {
  char buffer[kReadChunkBytes];
  while (true) {
    const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
    if (n > 0) {
      reader_.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
      return {};
    }
    if (n == 0) return closed_error(waiting_for);
    const int err = errno;
    if (err == EINTR) continue;
    if (err == ECONNRESET) return closed_error(waiting_for);
    if (err != EAGAIN && err != EWOULDBLOCK) {
      return unreachable("cannot read from looprd on " + socket_path_ + ": " + describe_errno(err),
                         kLogHint);
    }
    pollfd waiting{fd_.get(), POLLIN, 0};
    const int ready = ::poll(&waiting, 1, poll_timeout(deadline));
    if (ready < 0 && errno != EINTR) return errno_error(errno, "poll", socket_path_);
    if (ready == 0) {
      return make_error(
          errc::timeout,
          "looprd on " + socket_path_ + " did not send " + std::string(waiting_for) + " in time",
          "it may be busy or hung; see looprd.log in its state folder, or restart "
          "it: looprctl daemon stop && looprctl daemon start");
    }
  }
}

}  // namespace loopr::client
