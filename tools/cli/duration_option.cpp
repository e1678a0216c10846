#include "duration_option.hpp"

#include "duration.hpp"

namespace rlock::cli {
namespace {

CLI::Validator duration_validator(duration_bound bound) {
  return CLI::Validator(
      [bound](std::string& text) -> std::string {
        std::string why;
        const auto d = parse_duration(text, &why);
        if (!d) return why;
        if (bound == duration_bound::positive && d->count() == 0) {
          return "duration must be greater than zero";
        }
        return {};
      },
      "", "duration");
}

}  // namespace

CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::optional<std::chrono::milliseconds>& target,
                                 const std::string& description, duration_bound bound) {
  return app
      .add_option_function<std::string>(
          name, [&target](const std::string& text) { target = parse_duration(text); }, description)
      ->type_name("DUR")
      ->check(duration_validator(bound));
}

CLI::Option* add_duration_option(CLI::App& app, const std::string& name,
                                 std::chrono::milliseconds& target, const std::string& description,
                                 duration_bound bound) {
  return app
      .add_option_function<std::string>(
          name,
          [&target](const std::string& text) {
            if (auto d = parse_duration(text)) target = *d;
          },
          description + " (default " + format_duration(target) + ")")
      ->type_name("DUR")
      ->check(duration_validator(bound));
}

}  // namespace rlock::cli
