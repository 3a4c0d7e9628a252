#include "tui/daemon_link.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>

#include "client/control_client.hpp"
#include "client/failure.hpp"

namespace loopr::tui {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr client::ClientTimeouts kTimeouts{milliseconds(2000), milliseconds(10000)};
constexpr milliseconds kEventWait{200};
constexpr milliseconds kFirstBackoff{100};
constexpr milliseconds kMaxBackoff{2000};

std::int64_t steady_now_ms() {
  return std::chrono::duration_cast<milliseconds>(Clock::now().time_since_epoch()).count();
}

Result<Snapshot> read_snapshot(client::ControlClient& client) {
  Snapshot snapshot;
  if (client.session()) snapshot.daemon_version = client.session()->daemon_version;
  auto loops = client.call("loop.list");
  if (!loops) return loops.error();
  snapshot.loops = loops->value("loops", json::array());
  auto approvals = client.call("approval.list");
  if (!approvals) return approvals.error();
  snapshot.approvals = approvals->value("approvals", json::array());
  auto metrics = client.call("metrics.get");
  if (!metrics) return metrics.error();
  snapshot.metrics = std::move(*metrics);
  return snapshot;
}

// loop.transcript read page by page (`after` the last step id), at most
// DaemonLink::kMaxTranscriptSteps steps, the newest kept.
Result<json> read_transcript(client::ControlClient& client, const json& params,
                             const std::atomic<bool>& stopping) {
  json steps = json::array();
  json request = params;
  for (;;) {
    if (stopping) return make_error(errc::internal, "the TUI is quitting");
    request["limit"] = 1000;
    auto page = client.call("loop.transcript", request);
    if (!page) return page.error();
    const json batch = page->value("steps", json::array());
    for (const json& step : batch)
      steps.push_back(step);
    if (steps.size() > DaemonLink::kMaxTranscriptSteps)
      steps.erase(steps.begin(),
                  steps.begin() +
                      static_cast<std::ptrdiff_t>(steps.size() - DaemonLink::kMaxTranscriptSteps));
    if (page->value("more", false) != true || batch.empty() || !batch.back().contains("id")) break;
    request["after"] = batch.back()["id"];
  }
  return json{{"loop_id", params.value("id", "")}, {"steps", steps}};
}

}  // namespace

DaemonLink::DaemonLink(std::string socket_path)
    : socket_path_(std::move(socket_path)), wake_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

DaemonLink::~DaemonLink() {
  stop();
}

void DaemonLink::start() {
  events_thread_ = std::thread([this] { events_main(); });
  calls_thread_ = std::thread([this] { calls_main(); });
}

void DaemonLink::stop() {
  // Set under each waiter's mutex: a thread between its check and its wait
  // cannot miss the notification.
  {
    std::lock_guard outbox(outbox_mutex_);
    std::lock_guard sleep(sleep_mutex_);
    stopping_ = true;
  }
  outbox_ready_.notify_all();
  sleep_cv_.notify_all();
  if (events_thread_.joinable()) events_thread_.join();
  if (calls_thread_.joinable()) calls_thread_.join();
}

bool DaemonLink::send(Command command) {
  {
    std::lock_guard lock(outbox_mutex_);
    if (outbox_.size() >= kMaxOutbox) return false;
    outbox_.push_back(std::move(command));
  }
  outbox_ready_.notify_one();
  return true;
}

bool DaemonLink::post(LinkMessage message) {
  {
    std::lock_guard lock(inbox_mutex_);
    if (inbox_.size() >= kMaxInbox && message.kind == LinkMessage::Kind::event) {
      overflowed_ = true;
      return false;
    }
    inbox_.push_back(std::move(message));
  }
  const std::uint64_t one = 1;
  if (wake_) [[maybe_unused]]
    const auto written = ::write(wake_.get(), &one, sizeof one);
  return true;
}

std::vector<LinkMessage> DaemonLink::drain() {
  std::uint64_t count = 0;
  if (wake_) [[maybe_unused]]
    const auto read = ::read(wake_.get(), &count, sizeof count);
  std::deque<LinkMessage> taken;
  {
    std::lock_guard lock(inbox_mutex_);
    taken.swap(inbox_);
  }
  return std::vector<LinkMessage>(std::make_move_iterator(taken.begin()),
                                  std::make_move_iterator(taken.end()));
}

bool DaemonLink::sleep_or_stop(milliseconds wait) {
  std::unique_lock lock(sleep_mutex_);
  sleep_cv_.wait_for(lock, wait, [this] { return stopping_.load(); });
  return stopping_;
}

void DaemonLink::events_main() {
  milliseconds backoff = kFirstBackoff;
  bool ever_connected = false;
  std::string why;
  while (!stopping_) {
    LinkMessage state;
    state.kind = LinkMessage::Kind::link;
    state.link = ever_connected ? LinkState::reconnecting : LinkState::connecting;
    state.detail = why;
    post(std::move(state));

    auto client = client::ControlClient::open(socket_path_, kTimeouts);
    Result<Snapshot> snapshot = make_error(errc::internal, "not connected");
    if (client) {
      auto subscribed = client->call("events.subscribe");
      snapshot = subscribed ? read_snapshot(*client) : Result<Snapshot>(subscribed.error());
    }
    if (!client || !snapshot) {
      why = !client ? client.error().message : snapshot.error().message;
      if (sleep_or_stop(backoff)) return;
      backoff = std::min(backoff * 2, kMaxBackoff);
      continue;
    }
    ever_connected = true;
    overflowed_ = false;
    LinkMessage snap;
    snap.kind = LinkMessage::Kind::snapshot;
    snap.steady_ms = steady_now_ms();
    snap.snapshot = std::move(*snapshot);
    post(std::move(snap));
    LinkMessage connected;
    connected.kind = LinkMessage::Kind::link;
    connected.link = LinkState::connected;
    post(std::move(connected));

    auto last_metrics = Clock::now();
    const auto connected_at = Clock::now();
    std::uint64_t dropped_seen = client->dropped_events();
    while (!stopping_) {
      auto event = client->next_event(kEventWait);
      if (!event) {
        why = event.error().message;
        break;
      }
      if (*event) {
        LinkMessage message;
        message.kind = LinkMessage::Kind::event;
        message.event = std::move(**event);
        post(std::move(message));
      }
      // Events the client dropped while a call waited for its reply: what
      // they said is only in a new snapshot.
      if (client->dropped_events() != dropped_seen) {
        dropped_seen = client->dropped_events();
        overflowed_ = true;
      }
      if (overflowed_) {
        std::size_t waiting = 0;
        {
          std::lock_guard lock(inbox_mutex_);
          waiting = inbox_.size();
        }
        if (waiting < kMaxInbox / 2) {
          auto fresh = read_snapshot(*client);
          if (!fresh) {
            why = fresh.error().message;
            break;
          }
          overflowed_ = false;
          LinkMessage again;
          again.kind = LinkMessage::Kind::snapshot;
          again.steady_ms = steady_now_ms();
          again.snapshot = std::move(*fresh);
          post(std::move(again));
        }
      }
      if (Clock::now() - last_metrics >= kMetricsEvery) {
        last_metrics = Clock::now();
        auto metrics = client->call("metrics.get");
        if (!metrics) {
          why = metrics.error().message;
          break;
        }
        LinkMessage message;
        message.kind = LinkMessage::Kind::metrics;
        message.steady_ms = steady_now_ms();
        message.metrics = std::move(*metrics);
        post(std::move(message));
      }
    }
    // A connection that dropped soon after it was made (looprd dropping a
    // slow reader, or restarting) is retried after the back-off, not at once.
    if (Clock::now() - connected_at >= std::chrono::seconds(5)) {
      backoff = kFirstBackoff;
    } else {
      if (sleep_or_stop(backoff)) return;
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }
}

void DaemonLink::calls_main() {
  std::optional<client::ControlClient> client;
  while (true) {
    Command command;
    {
      std::unique_lock lock(outbox_mutex_);
      outbox_ready_.wait(lock, [this] { return stopping_ || !outbox_.empty(); });
      if (stopping_) return;
      command = std::move(outbox_.front());
      outbox_.pop_front();
    }
    LinkMessage reply;
    reply.kind = LinkMessage::Kind::reply;
    reply.command = command;
    if (!client) {
      auto opened = client::ControlClient::open(socket_path_, kTimeouts);
      if (opened) {
        client.emplace(std::move(*opened));
      } else {
        reply.detail = "looprd is unreachable: " + opened.error().message;
        post(std::move(reply));
        continue;
      }
    }
    Result<json> result = command.method == "loop.transcript"
                              ? read_transcript(*client, command.params, stopping_)
                              : client->call(command.method, command.params);
    if (result) {
      reply.ok = true;
      reply.result = std::move(*result);
    } else {
      reply.detail = result.error().message;
      if (result.error().code != client::failure::rpc_error) client.reset();
    }
    post(std::move(reply));
  }
}

}  // namespace loopr::tui
