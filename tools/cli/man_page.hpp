// man_page.hpp: rlock(1) in troff (man macros), generated from the same CLI11 definitions and
// help text as `--help`, so the two never disagree. Built into docs/rlock.1 by the hidden
// `rlock --man` option at build time.
//
// Guarantees: the output is plain troff using only man(7) macros (TH, SH, SS, PP, nf/fi, TP);
// help text is escaped (backslashes, leading dots and quotes), so any text renders literally.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace rlock::cli {

std::string make_man_page(const CLI::App& app, const std::string& version);

}  // namespace rlock::cli
