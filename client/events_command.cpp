// looprctl events [--topic T]... [--count N]: subscribes and prints pushed
// events, one per line, flushed as they come, until N events were printed,
// the daemon closes the connection, or the user interrupts.
#include <ostream>

#include "client/commands.hpp"
#include "client/text_format.hpp"

namespace loopr::client {

int run_events(const CommandContext& context, const EventsOptions& options) {
  auto client = context.open();
  if (!client) return context.fail(client.error());
  auto subscribed =
      client->call<proto::methods::EventsSubscribe>({options.topics, std::nullopt, false});
  if (!subscribed) return context.fail(subscribed.error());
  if (!subscribed->is_object()) {
    return context.fail(make_error(errc::protocol, "the events.subscribe result is not an object"));
  }

  std::uint64_t printed = 0;
  std::uint64_t dropped_reported = 0;
  while (!options.count || printed < *options.count) {
    auto event = client->next_event(Milliseconds::max());
    if (!event) return context.fail(event.error());
    if (!*event) continue;
    if (client->dropped_events() > dropped_reported) {
      context.err << "looprctl: " << client->dropped_events() - dropped_reported
                  << " events were dropped (arrived faster than they were printed)\n";
      dropped_reported = client->dropped_events();
    }
    if (context.json) {
      context.out << compact_json(proto::to_json(**event)) << '\n';
    } else {
      context.out << printable((*event)->event) << ' ' << printable(compact_json((*event)->data))
                  << '\n';
    }
    context.out.flush();
    ++printed;
  }
  return to_int(ExitStatus::ok);
}

}  // namespace loopr::client
