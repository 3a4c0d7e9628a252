// WebhookNotifier: sends [notify] notifications (notification.hpp) to the
// configured webhook as HTTP POSTs, each on its own coroutine through an
// HttpClient of its own, so a slow or dead endpoint never holds up looprd.
// A failed POST (no answer, a non-2xx status) is logged without the URL,
// which may hold a token, and never retried or fatal; past max_per_minute in
// any minute notifications are dropped and the drop is logged.
//
// Threads: on_event runs on the daemon's io thread (the daemon hands it the
// events it subscribed to); the HttpClient's worker thread does the I/O.
#pragma once

#include <asio/awaitable.hpp>
#include <asio/io_context.hpp>
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "config/settings.hpp"
#include "llm/http_client.hpp"
#include "notify/notification.hpp"

namespace loopr::notify {

class WebhookNotifier {
 public:
  // The events it needs, as EventBus topics.
  static constexpr const char* kTopics[] = {"approval.requested", "loop.updated"};

  WebhookNotifier(asio::io_context& io, config::NotifySettings settings);

  void on_event(std::string_view event, const nlohmann::json& data);

  std::size_t sent() const { return sent_; }
  std::size_t failed() const { return failed_; }

 private:
  asio::awaitable<void> post(std::string event, std::string body);

  asio::io_context& io_;
  config::NotifySettings settings_;
  std::unique_ptr<llm::HttpClient> http_;
  NotificationFilter filter_;
  RateLimit limit_;
  std::size_t sent_ = 0;
  std::size_t failed_ = 0;
};

}  // namespace loopr::notify
