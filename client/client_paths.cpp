#include "client/client_paths.hpp"

#include <exception>
#include <ostream>

#include "common/error.hpp"
#include "config/settings.hpp"

namespace loopr::client {

config::Paths resolve_client_paths(const config::PathFlags& flags, std::ostream& err) {
  const config::Paths first = config::resolve_paths(flags);
  try {
    const config::Settings settings = config::Settings::load(first.settings_file());
    return config::resolve_paths(flags, &settings.daemon);
  } catch (const StartupError&) {
    throw;
  } catch (const std::exception& e) {
    err << "looprctl: warning: ignoring " << first.settings_file() << ": " << e.what() << '\n';
    return first;
  }
}

}  // namespace loopr::client
