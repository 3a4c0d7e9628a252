#include "notify/webhook_notifier.hpp"

#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <chrono>
#include <utility>

namespace loopr::notify {

WebhookNotifier::WebhookNotifier(asio::io_context& io, config::NotifySettings settings)
    : io_(io),
      settings_(std::move(settings)),
      http_(std::make_unique<llm::HttpClient>(io)),
      limit_(static_cast<std::size_t>(settings_.max_per_minute)) {}

void WebhookNotifier::on_event(std::string_view event, const nlohmann::json& data) {
  std::optional<Notification> notification = filter_.on_event(event, data);
  if (!notification) return;
  if (!limit_.allow(RateLimit::Clock::now())) {
    spdlog::warn("notify: dropped {} ({} dropped so far): more than {} notifications a minute",
                 notification->event, limit_.dropped(), settings_.max_per_minute);
    return;
  }
  std::string body = webhook_body(*notification, settings_.webhook_body);
  asio::co_spawn(io_, post(notification->event, std::move(body)), asio::detached);
}

asio::awaitable<void> WebhookNotifier::post(std::string event, std::string body) {
  llm::HttpRequest request;
  request.method = "POST";
  request.url = settings_.webhook_url;
  const bool json = settings_.webhook_body.empty() ||
                    nlohmann::json::accept(body);  // else text, as ntfy takes it
  request.headers = {{"content-type", json ? "application/json" : "text/plain; charset=utf-8"}};
  request.body = std::move(body);
  request.connect_timeout = std::chrono::seconds(10);
  request.first_byte_timeout = std::chrono::seconds(15);
  request.idle_timeout = std::chrono::seconds(15);
  request.max_response_bytes = 64 * 1024;
  auto answer = co_await http_->fetch(std::move(request));
  if (!answer) {
    ++failed_;
    spdlog::warn("notify: the webhook did not take {}: {}", event, answer.error().code);
    co_return;
  }
  if (answer->first.status < 200 || answer->first.status >= 300) {
    ++failed_;
    spdlog::warn("notify: the webhook answered {} with HTTP {}", event, answer->first.status);
    co_return;
  }
  ++sent_;
}

}  // namespace loopr::notify
