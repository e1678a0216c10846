#include "help_formatter.hpp"

namespace rlock::cli {

std::string help_formatter::make_usage(const CLI::App* app, std::string name) const {
  const auto it = usage_.find(app);
  if (it == usage_.end()) return CLI::Formatter::make_usage(app, std::move(name));
  return "Usage: " + it->second + "\n";
}

std::string help_formatter::make_option_desc(const CLI::Option* opt) const {
  const std::string text = CLI::Formatter::make_option_desc(opt);
  const std::size_t room = width > get_column_width() + 20 ? width - get_column_width() : 20;
  // CLI11 indents the text after each '\n' to the description column.
  std::string out;
  std::size_t line = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (line > 0 && line + 1 + word.size() > room) {
      out += '\n';
      line = 0;
    } else if (line > 0) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    start = end + 1;
  }
  return out;
}

}  // namespace rlock::cli
