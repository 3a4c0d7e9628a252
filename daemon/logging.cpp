#include "daemon/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>

namespace loopr::daemon {
namespace {

// "%*": the syslog priority prefix journald reads from a stream.
class SyslogPriority : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    const char* prefix = "<6>";
    switch (message.level) {
      case spdlog::level::trace:
      case spdlog::level::debug:
        prefix = "<7>";
        break;
      case spdlog::level::info:
        prefix = "<6>";
        break;
      case spdlog::level::warn:
        prefix = "<4>";
        break;
      case spdlog::level::err:
        prefix = "<3>";
        break;
      case spdlog::level::critical:
        prefix = "<2>";
        break;
      default:
        break;
    }
    out.append(prefix, prefix + 3);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<SyslogPriority>();
  }
};

spdlog::level::level_enum to_spdlog(config::LogLevel level) {
  switch (level) {
    case config::LogLevel::trace:
      return spdlog::level::trace;
    case config::LogLevel::debug:
      return spdlog::level::debug;
    case config::LogLevel::info:
      return spdlog::level::info;
    case config::LogLevel::warn:
      return spdlog::level::warn;
    case config::LogLevel::error:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

}  // namespace

void configure_logging(config::LogLevel level) {
  auto logger =
      std::make_shared<spdlog::logger>("looprd", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  const char* journal = std::getenv("JOURNAL_STREAM");
  if (journal != nullptr && journal[0] != '\0') {
    formatter->add_flag<SyslogPriority>('*').set_pattern("%*%v");
  } else {
    formatter->set_pattern("%Y-%m-%d %H:%M:%S.%e looprd %l: %v");
  }
  logger->set_formatter(std::move(formatter));
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(std::move(logger));
}

}  // namespace loopr::daemon
