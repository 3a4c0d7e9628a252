// Terminal rendering of memory notes (docs/control-protocol.md "Memory
// notes"): memory.list's table, memory.search's hits, one whole note. Pure
// functions over JSON, like client/loop_view.hpp: any shape is accepted (a
// missing or mistyped field renders as "-"), and every string the daemon
// sent goes through printable()/printable_lines() first, so a note's text
// cannot drive the terminal. Thread-compatible.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "client/terminal.hpp"

namespace loopr::client {

// "2025-01-02T03:04:05Z" as "2025-01-02 03:04 UTC"; another string printable as
// it is; "-" when `time` is not a string.
std::string format_note_time(const nlohmann::json& time);

// A search snippet, printable (newlines kept), its matched words (each
// between "**") in bold when `bold`, else with their "**" as sent. A "**"
// left open is closed at the end.
std::string render_matches(std::string_view snippet, bool bold);

// ID SCOPE REPO UPDATED TEXT, one row per note (REPO "(user)" for a note of
// the user alone), TEXT the note's first line cut so the row fits
// style.columns. When fewer than 20 columns would be left for it, every
// note's text goes on the line under its row instead, indented. "no notes"
// when there are none. Entries that are not objects are skipped.
void print_note_table(const nlohmann::json& notes, const TerminalStyle& style, std::ostream& out);

// Each hit of memory.search: a line with the note's id (for a conversation
// turn: its loop and iteration), the score, where it comes from and when it
// was updated, then its snippet indented (render_matches). A blank line
// between hits.
void print_search_hits(const nlohmann::json& results, const TerminalStyle& style,
                       std::ostream& out);

// One note with every field, then its whole text.
void print_note(const nlohmann::json& note, std::ostream& out);

}  // namespace loopr::client
