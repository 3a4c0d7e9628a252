#include "client/approval_view.hpp"

#include "client/loop_view.hpp"
#include "client/text_format.hpp"
#include "proto/approval_reason.hpp"

namespace loopr::client {

using nlohmann::json;

std::string why_it_waits(const json& approval) {
  return printable(proto::approval_reason(approval));
}

std::string waiting_for_approval_line(const json& approval) {
  const std::string id = string_of(approval, "id");
  return "waiting for your approval: " + printable(string_of(approval, "tool")) + " (" +
         printable(id) + ") \xe2\x80\x94 looprctl approve " + shell_word(id) +
         ", or looprctl deny " + shell_word(id);
}

}  // namespace loopr::client
