#pragma once
// Every environment variable the host reads, in one registry: its name, what it holds, its default and
// one line of documentation (`gradsweep reference` writes them into docs/reference/environment.md; a test
// checks that no other file in host/ calls getenv). Each typed accessor is the one
// parser of its kind, and a bad value is an error naming the variable and the value:
// "GRADSWEEP_RANKS_PER_NODE='x': expected a positive integer".
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradsweep::env {

struct Variable {
  const char* name;
  const char* type;           // what a value looks like, as the docs say it
  const char* default_value;  // what unset means
  const char* doc;            // one line
  const char* expected;       // the tail of a bad value's message, "expected <this>"; "" when any value goes
  bool gradsweep;             // gradsweep's own; false: set by the system or the MPI launcher, only read
  bool forwarded;             // the local launcher passes it on to every rank (mpirun -x) when set
};

// In the order the reference lists them: gradsweep's own, then the ones it only reads.
const std::vector<Variable>& registry();
// The entry of `name`; std::logic_error for a name that is not registered (a bug in the caller).
const Variable& variable(std::string_view name);

// The value of a registered variable: nullopt when unset (an empty value is returned as "").
std::optional<std::string> raw(std::string_view name);
// Set to something other than "".
bool is_set(std::string_view name);
// The value, "" when unset.
std::string text(std::string_view name);

// Each of these reads a registered variable; unset or "" gives nullopt, a bad value throws
// std::invalid_argument "NAME='value': expected <the entry's expected>".
std::optional<long> positive_integer(std::string_view name, long max);
std::optional<double> non_negative_number(std::string_view name);
std::optional<bool> flag(std::string_view name);  // 1, true, 0, false
// A ':'-separated list, empty items skipped; empty when unset.
std::vector<std::string> path_list(std::string_view name);

}  // namespace gradsweep::env
