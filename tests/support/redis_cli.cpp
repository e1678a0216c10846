#include "support/redis_cli.hpp"

#include <charconv>
#include <csignal>
#include <optional>
#include <stdexcept>
#include <utility>

#include "support/process.hpp"

namespace rlock::test {

namespace {

class json_reply_parser {
 public:
  explicit json_reply_parser(std::string_view text) : text_(text) {}

  raw_reply parse() {
    raw_reply result = value();
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters");
    return result;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("parse_redis_cli_json: " + what + " at offset " +
                             std::to_string(pos_) + " in: " + std::string(text_));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r' || text_[pos_] == '\t')) {
      ++pos_;
    }
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  raw_reply value() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    const char c = text_[pos_];
    if (consume("null")) return raw_reply::make_nil();
    if (consume("error:")) return raw_reply::make_error(string());
    if (c == '"') return raw_reply::make_string(string());
    if (c == '[') return array();
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    fail("unexpected character");
  }

  raw_reply number() {
    const std::size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    long long v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (ec != std::errc() || end != text_.data() + pos_) fail("bad integer");
    return raw_reply::make_integer(v);
  }

  raw_reply array() {
    ++pos_;  // '['
    std::vector<raw_reply> elements;
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return raw_reply::make_array(std::move(elements));
    }
    for (;;) {
      elements.push_back(value());
      skip_space();
      if (pos_ >= text_.size()) fail("unterminated array");
      const char c = text_[pos_++];
      if (c == ']') break;
      if (c != ',') fail("expected ',' or ']'");
    }
    return raw_reply::make_array(std::move(elements));
  }

  unsigned hex4() {
    if (pos_ + 4 > text_.size()) fail("short \\u escape");
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + pos_ + 4, v, 16);
    if (ec != std::errc() || end != text_.data() + pos_ + 4) fail("bad \\u escape");
    pos_ += 4;
    return v;
  }

  static void append_utf8(std::string& out, unsigned cp) {
    auto byte = [](unsigned v) { return static_cast<char>(static_cast<unsigned char>(v)); };
    if (cp < 0x80U) {
      out += byte(cp);
    } else if (cp < 0x800U) {
      out += byte(0xC0U | (cp >> 6U));
      out += byte(0x80U | (cp & 0x3FU));
    } else if (cp < 0x10000U) {
      out += byte(0xE0U | (cp >> 12U));
      out += byte(0x80U | ((cp >> 6U) & 0x3FU));
      out += byte(0x80U | (cp & 0x3FU));
    } else {
      out += byte(0xF0U | (cp >> 18U));
      out += byte(0x80U | ((cp >> 12U) & 0x3FU));
      out += byte(0x80U | ((cp >> 6U) & 0x3FU));
      out += byte(0x80U | (cp & 0x3FU));
    }
  }

  std::string string() {
    if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected '\"'");
    ++pos_;
    std::string out;
    for (;;) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
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
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800U && cp < 0xDC00U && consume("\\u")) {
            const unsigned low = hex4();
            cp = 0x10000U + ((cp - 0xD800U) << 10U) + (low - 0xDC00U);
          }
          append_utf8(out, cp);
          break;
        }
        default:
          fail("bad escape");
      }
    }
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

raw_reply parse_redis_cli_json(std::string_view text) {
  return json_reply_parser(text).parse();
}

raw_reply run_redis_cli(const redis_cli_target& target, const std::vector<std::string>& args,
                        std::chrono::milliseconds timeout) {
  if (args.empty()) throw std::invalid_argument("run_redis_cli: empty command");
  std::vector<std::string> argv{"-h", target.host, "-p", std::to_string(target.port)};
  if (target.tls != nullptr) {
    argv.insert(argv.end(),
                {"--tls", "--cacert", target.tls->ca_cert.string(), "--cert",
                 target.tls->client_cert.string(), "--key", target.tls->client_key.string()});
  }
  argv.insert(argv.end(), {"-2", "--json"});
  argv.insert(argv.end(), args.begin(), args.end());

  child_options options;
  options.capture_stderr = true;
  if (!target.password.empty()) options.extra_env.push_back("REDISCLI_AUTH=" + target.password);
  child_process cli(find_program("redis-cli", "/usr/bin/redis-cli"), std::move(argv),
                    std::move(options));
  std::optional<int> status = cli.wait_for(timeout);
  if (!status) {
    cli.kill(SIGKILL);
    cli.wait_for(std::chrono::seconds(5));
    throw std::runtime_error("redis-cli " + args.front() + " timed out after " +
                             std::to_string(timeout.count()) + " ms:\n" + cli.output() +
                             cli.error_output());
  }
  std::string output = cli.output();
  if (*status != 0) {
    throw std::runtime_error("redis-cli " + args.front() + " failed (status " +
                             std::to_string(*status) + "):\n" + output + cli.error_output());
  }
  if (!output.empty() && output.back() == '\n') output.pop_back();  // added by redis-cli
  try {
    return parse_redis_cli_json(output);
  } catch (const std::runtime_error&) {
    // redis-cli prints some commands' replies raw whatever the output mode (INFO, CLIENT LIST,
    // CLIENT INFO, LATENCY DOCTOR, ...): those replies are single bulk strings.
    return raw_reply::make_string(std::move(output));
  }
}

}  // namespace rlock::test
