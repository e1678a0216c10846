#include "faults/history.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <utility>

namespace rlock::faults {
namespace {

constexpr std::array<std::pair<event_kind, std::string_view>, 21> kind_names{{
    {event_kind::start, "start"},
    {event_kind::acquire_invoke, "acquire-invoke"},
    {event_kind::acquire_ok, "acquire-ok"},
    {event_kind::acquire_fail, "acquire-fail"},
    {event_kind::read, "read"},
    {event_kind::read_fail, "read-fail"},
    {event_kind::write_invoke, "write-invoke"},
    {event_kind::write_ok, "write-ok"},
    {event_kind::write_fail, "write-fail"},
    {event_kind::write_skip, "write-skip"},
    {event_kind::release_invoke, "release-invoke"},
    {event_kind::release_ok, "release-ok"},
    {event_kind::release_fail, "release-fail"},
    {event_kind::loss, "loss"},
    {event_kind::idle, "idle"},
    {event_kind::exit, "exit"},
    {event_kind::fault_start, "fault-start"},
    {event_kind::fault_end, "fault-end"},
    {event_kind::stopped, "stopped"},
    {event_kind::resumed, "resumed"},
    {event_kind::killed, "killed"},
}};

void append_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_field(std::string& out, std::string_view key) {
  out += ",\"";
  out += key;
  out += "\":";
}

// A cursor over one JSON line: just enough for a flat object of strings, integers, booleans.
class json_cursor {
 public:
  explicit json_cursor(std::string_view s) : s_(s) {}

  void skip_ws() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_ws();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip_ws();
    return pos_ == s_.size();
  }
  char peek() {
    skip_ws();
    return pos_ < s_.size() ? s_[pos_] : '\0';
  }
  std::optional<std::string> string() {
    if (!eat('"')) return std::nullopt;
    std::string out;
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return std::nullopt;
      const char e = s_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return std::nullopt;
          unsigned code = 0;
          const auto r = std::from_chars(s_.data() + pos_, s_.data() + pos_ + 4, code, 16);
          if (r.ptr != s_.data() + pos_ + 4 || code > 0x7f) return std::nullopt;  // ASCII only
          out += static_cast<char>(code);
          pos_ += 4;
          break;
        }
        default:
          return std::nullopt;
      }
    }
    return std::nullopt;
  }
  std::optional<long long> integer() {
    skip_ws();
    long long v = 0;
    const auto r = std::from_chars(s_.data() + pos_, s_.data() + s_.size(), v);
    if (r.ec != std::errc()) return std::nullopt;
    pos_ = static_cast<std::size_t>(r.ptr - s_.data());
    return v;
  }
  std::optional<bool> boolean() {
    skip_ws();
    if (s_.substr(pos_).starts_with("true")) {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_).starts_with("false")) {
      pos_ += 5;
      return false;
    }
    return std::nullopt;
  }
  bool null() {
    skip_ws();
    if (!s_.substr(pos_).starts_with("null")) return false;
    pos_ += 4;
    return true;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

}  // namespace

std::string_view to_string(event_kind k) {
  for (const auto& [kind, name] : kind_names) {
    if (kind == k) return name;
  }
  return "unknown";
}

std::optional<event_kind> parse_event_kind(std::string_view s) {
  for (const auto& [kind, name] : kind_names) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

std::string to_json(const event& e) {
  std::string out = "{\"ev\":";
  append_string(out, to_string(e.kind));
  append_field(out, "t");
  out += std::to_string(e.t_ns);
  append_field(out, "w");
  out += std::to_string(e.worker);
  if (!e.owner.empty()) {
    append_field(out, "owner");
    append_string(out, e.owner);
  }
  if (e.value) {
    append_field(out, "value");
    out += std::to_string(*e.value);
  }
  if (e.deadline_ns != 0) {
    append_field(out, "deadline");
    out += std::to_string(e.deadline_ns);
  }
  if (e.valid_until_ns != 0) {
    append_field(out, "valid_until");
    out += std::to_string(e.valid_until_ns);
  }
  if (e.token != 0) {
    append_field(out, "token");
    out += std::to_string(e.token);
  }
  if (e.lost) {
    append_field(out, "lost");
    out += "true";
  }
  if (e.indeterminate) {
    append_field(out, "indeterminate");
    out += "true";
  }
  if (!e.error.empty()) {
    append_field(out, "error");
    append_string(out, e.error);
  }
  if (!e.detail.empty()) {
    append_field(out, "detail");
    append_string(out, e.detail);
  }
  out += '}';
  return out;
}

std::optional<event> parse_event(std::string_view line) {
  json_cursor in(line);
  if (!in.eat('{')) return std::nullopt;
  event e;
  bool have_kind = false;
  bool have_time = false;
  bool first = true;
  while (!in.eat('}')) {
    if (!first && !in.eat(',')) return std::nullopt;
    first = false;
    auto key = in.string();
    if (!key || !in.eat(':')) return std::nullopt;
    const char next = in.peek();
    if (next == '"') {
      auto v = in.string();
      if (!v) return std::nullopt;
      if (*key == "ev") {
        auto k = parse_event_kind(*v);
        if (!k) return std::nullopt;
        e.kind = *k;
        have_kind = true;
      } else if (*key == "owner") {
        e.owner = std::move(*v);
      } else if (*key == "error") {
        e.error = std::move(*v);
      } else if (*key == "detail") {
        e.detail = std::move(*v);
      }
    } else if (next == 't' || next == 'f') {
      auto v = in.boolean();
      if (!v) return std::nullopt;
      if (*key == "lost") e.lost = *v;
      if (*key == "indeterminate") e.indeterminate = *v;
    } else if (next == 'n') {
      if (!in.null()) return std::nullopt;
    } else {
      auto v = in.integer();
      if (!v) return std::nullopt;
      if (*key == "t") {
        e.t_ns = *v;
        have_time = true;
      } else if (*key == "w") {
        e.worker = static_cast<int>(*v);
      } else if (*key == "value") {
        e.value = *v;
      } else if (*key == "deadline") {
        e.deadline_ns = *v;
      } else if (*key == "valid_until") {
        e.valid_until_ns = *v;
      } else if (*key == "token") {
        e.token = *v;
      }
    }
  }
  if (!in.at_end() || !have_kind || !have_time) return std::nullopt;
  return e;
}

std::vector<event> parse_history(std::string_view text, std::size_t* malformed) {
  std::vector<event> out;
  std::size_t bad = 0;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) break;  // an incomplete last line is not an event yet
    const auto line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.empty()) continue;
    if (auto e = parse_event(line)) {
      out.push_back(std::move(*e));
    } else {
      ++bad;
    }
  }
  if (malformed) *malformed += bad;
  return out;
}

std::int64_t to_ns(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

std::int64_t now_ns() {
  return to_ns(std::chrono::steady_clock::now());
}

history_reader::history_reader(std::filesystem::path path) : path_(std::move(path)) {}

std::vector<event> history_reader::poll() {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path_, ec);
  if (ec || size <= offset_) return {};  // nothing new (or not created yet)
  std::ifstream in(path_, std::ios::binary);
  if (!in) return {};
  in.seekg(static_cast<std::streamoff>(offset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  offset_ += chunk.size();
  partial_ += chunk;
  const auto last_nl = partial_.rfind('\n');
  if (last_nl == std::string::npos) return {};
  auto events = parse_history(std::string_view(partial_).substr(0, last_nl + 1), &malformed_);
  partial_.erase(0, last_nl + 1);
  return events;
}

}  // namespace rlock::faults
