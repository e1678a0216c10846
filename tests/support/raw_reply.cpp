#include "support/raw_reply.hpp"

#include <array>
#include <stdexcept>

namespace rlock::test {

namespace {

void append_text(const raw_reply& reply, std::string& out, bool& first) {
  if (reply.is_array()) {
    for (const auto& element : reply.elements) append_text(element, out, first);
    return;
  }
  if (!first) out += '\n';
  first = false;
  switch (reply.type) {
    case raw_reply::kind::string:
    case raw_reply::kind::status:
      out += reply.str;
      break;
    case raw_reply::kind::error:
      out += "(error) ";
      out += reply.str;
      break;
    case raw_reply::kind::integer:
      out += std::to_string(reply.integer);
      break;
    case raw_reply::kind::nil:
      out += "(nil)";
      break;
    case raw_reply::kind::array:
      break;
  }
}

void write_quoted(std::ostream& out, const std::string& s) {
  static constexpr std::array<char, 16> hex{'0', '1', '2', '3', '4', '5', '6', '7',
                                            '8', '9', 'a', 'b', 'c', 'd', 'e', 'f'};
  out << '"';
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out << '\\' << c;
    } else if (c == '\n') {
      out << "\\n";
    } else if (c == '\r') {
      out << "\\r";
    } else if (c == '\t') {
      out << "\\t";
    } else if (byte < 0x20 || byte >= 0x7f) {
      out << "\\x" << hex.at(byte >> 4U) << hex.at(byte & 0xfU);
    } else {
      out << c;
    }
  }
  out << '"';
}

}  // namespace

std::string raw_reply::text() const {
  std::string out;
  bool first = true;
  append_text(*this, out, first);
  return out;
}

std::map<std::string, std::string> raw_reply::as_map() const {
  if (!is_array() || elements.size() % 2 != 0) {
    throw std::logic_error("raw_reply::as_map: not an array of field/value pairs");
  }
  std::map<std::string, std::string> result;
  for (std::size_t i = 0; i < elements.size(); i += 2) {
    const auto& field = elements[i];
    const auto& value = elements[i + 1];
    if (field.is_array() || value.is_array()) {
      throw std::logic_error("raw_reply::as_map: nested array");
    }
    result[field.text()] = value.text();
  }
  return result;
}

const char* to_string(raw_reply::kind k) {
  switch (k) {
    case raw_reply::kind::string:
      return "string";
    case raw_reply::kind::status:
      return "status";
    case raw_reply::kind::error:
      return "error";
    case raw_reply::kind::integer:
      return "integer";
    case raw_reply::kind::nil:
      return "nil";
    case raw_reply::kind::array:
      return "array";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& out, const raw_reply& reply) {
  switch (reply.type) {
    case raw_reply::kind::string:
      write_quoted(out, reply.str);
      break;
    case raw_reply::kind::status:
      out << reply.str;
      break;
    case raw_reply::kind::error:
      out << "(error) " << reply.str;
      break;
    case raw_reply::kind::integer:
      out << "(integer) " << reply.integer;
      break;
    case raw_reply::kind::nil:
      out << "(nil)";
      break;
    case raw_reply::kind::array: {
      out << '[';
      const char* separator = "";
      for (const auto& element : reply.elements) {
        out << separator << element;
        separator = ", ";
      }
      out << ']';
      break;
    }
  }
  return out;
}

}  // namespace rlock::test
