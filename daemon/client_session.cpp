#include "daemon/client_session.hpp"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/write.hpp>

#include "proto/line_codec.hpp"

namespace loopr::daemon {

using asio::redirect_error;
using asio::use_awaitable;

namespace {

// After EOF on read: true if the peer closed its socket altogether, false if
// it only shut down its sending side and still reads. Linux reports POLLHUP
// on a Unix stream socket only once both directions are shut.
bool peer_hung_up(int fd) {
  pollfd probe{fd, POLLOUT, 0};
  return ::poll(&probe, 1, 0) == 1 && (probe.revents & (POLLHUP | POLLERR)) != 0;
}

}  // namespace

ClientSession::ClientSession(asio::local::stream_protocol::socket socket, std::uint64_t id,
                             RequestDispatcher dispatcher, std::size_t max_queued_bytes)
    : socket_(std::move(socket)),
      id_(id),
      name_("client-" + std::to_string(id)),
      dispatcher_(std::move(dispatcher)),
      max_queued_bytes_(max_queued_bytes),
      wake_writer_(socket_.get_executor()),
      request_done_(socket_.get_executor()) {}

ClientSession::~ClientSession() = default;

void ClientSession::start() {
  auto self = shared_from_this();
  asio::co_spawn(
      socket_.get_executor(), [self]() { return self->reader(); }, asio::detached);
  asio::co_spawn(
      socket_.get_executor(), [self]() { return self->writer(); }, asio::detached);
}

void ClientSession::send_line(std::string line) {
  if (closed_) return;
  queued_bytes_ += line.size();
  if (queued_bytes_ > max_queued_bytes_) {
    close("it did not read its replies (" + std::to_string(queued_bytes_) + " bytes queued, cap " +
          std::to_string(max_queued_bytes_) + ")");
    return;
  }
  outbox_.push_back(std::move(line));
  wake_writer_.notify();
}

void ClientSession::send(const proto::Response& response) {
  auto line = proto::encode_line(proto::to_json(response));
  if (!line) {
    // Only a result over the 16 MiB line cap gets here: say so instead.
    auto fallback = proto::encode_line(proto::to_json(proto::Response::failure(
        response.id,
        proto::ControlError{static_cast<int>(proto::ControlErrorCode::internal_error),
                            "the reply was too large to send: " + line.error().message, nullptr})));
    if (fallback) send_line(std::move(*fallback));
    return;
  }
  send_line(std::move(*line));
}

void ClientSession::close(const std::string& why) {
  if (closed_) return;
  closed_ = true;
  spdlog::debug("{} closed: {}", name_, why);
  if (!why.empty() && why != "it closed the connection") {
    spdlog::warn("{} disconnected: {}", name_, why);
  }
  outbox_.clear();
  queued_bytes_ = 0;
  std::error_code ignored;
  socket_.shutdown(asio::socket_base::shutdown_both, ignored);
  socket_.close(ignored);
  wake_writer_.notify();
  request_done_.notify();
  if (on_close) {
    auto callback = std::move(on_close);
    on_close = nullptr;
    callback(*this);
  }
}

void ClientSession::close_after_flush() {
  closing_ = true;
  wake_writer_.notify();
}

asio::awaitable<void> ClientSession::reader() {
  auto self = shared_from_this();
  proto::LineReader lines;
  std::string buffer(64 * 1024, '\0');
  while (!closed_) {
    std::error_code ec;
    const std::size_t n =
        co_await socket_.async_read_some(asio::buffer(buffer), redirect_error(use_awaitable, ec));
    if (ec == asio::error::eof && !peer_hung_up(socket_.native_handle())) {
      // Half-closed: every request is in; answer them, then close.
      close_after_flush();
      co_return;
    }
    if (ec) {
      close(ec == asio::error::eof ? "it closed the connection" : ec.message());
      co_return;
    }
    lines.feed(std::string_view(buffer.data(), n));
    for (;;) {
      auto value = lines.next();
      if (!value) {
        send(proto::error_reply(value.error()));
        if (lines.failed()) {  // a line over the cap: the connection cannot recover
          close_after_flush();
          co_return;
        }
        continue;
      }
      if (!*value) break;
      auto request = proto::parse_request(**value);
      if (!request) {
        send(proto::error_reply(request.error()));
        continue;
      }
      // Backpressure: at the cap, stop taking requests until one finishes.
      while (in_flight_ >= kMaxRequestsInFlight && !closed_) {
        request_done_.reset();
        co_await request_done_.wait();
      }
      if (closed_ || closing_) co_return;
      ++in_flight_;
      asio::co_spawn(
          socket_.get_executor(),
          [self, req = std::move(*request)]() mutable { return self->handle(std::move(req)); },
          asio::detached);
    }
  }
}

asio::awaitable<void> ClientSession::handle(proto::Request request) {
  auto self = shared_from_this();
  proto::Response response = co_await dispatcher_(*this, std::move(request));
  --in_flight_;
  request_done_.notify();
  send(response);
  if (closing_) wake_writer_.notify();
}

asio::awaitable<void> ClientSession::writer() {
  auto self = shared_from_this();
  while (!closed_) {
    if (outbox_.empty()) {
      if (closing_ && in_flight_ == 0) {
        close("");
        co_return;
      }
      wake_writer_.reset();
      co_await wake_writer_.wait();
      continue;
    }
    // Gather what is queued into one write: fewer syscalls under load.
    std::string batch = std::move(outbox_.front());
    outbox_.pop_front();
    while (!outbox_.empty() && batch.size() < 256 * 1024) {
      batch += outbox_.front();
      outbox_.pop_front();
    }
    std::error_code ec;
    co_await asio::async_write(socket_, asio::buffer(batch), redirect_error(use_awaitable, ec));
    queued_bytes_ -= std::min(queued_bytes_, batch.size());
    if (ec) {
      close(ec.message());
      co_return;
    }
  }
}

}  // namespace loopr::daemon
