#pragma once
// Values that travel from an experiment file into a generated shell script (the Slurm batch script).
// The script is run by bash on the cluster, so a value such as `'; rm -rf / #` or `$(touch x)` must arrive
// as data, never as code: every free-form value is single-quoted, and values with a fixed grammar
// (numbers, Slurm times, ids) are checked against it before they are written at all.
#include <string>
#include <string_view>
#include <vector>

namespace gradsweep::experiment::slurm {

// `value` as one bash word that expands to exactly `value`: wrapped in single quotes, each ' written as
// '\'' (close, escaped quote, reopen). Inside single quotes bash expands nothing ($, `, \, ! are plain).
std::string shell_quote(std::string_view value);

// The words of a command line, each quoted, separated by spaces (for command.txt and logs).
std::string shell_join(const std::vector<std::string>& words);

// Throws std::invalid_argument naming `what` unless `value` is a Slurm time limit: MM, MM:SS, HH:MM:SS,
// D-HH, D-HH:MM or D-HH:MM:SS (digits only), or "UNLIMITED"/"INFINITE".
void check_slurm_time(std::string_view value, std::string_view what);

// Throws std::invalid_argument naming `what` unless `value` is made of [A-Za-z0-9_.-] only and not empty
// (cell ids, config hashes, job ids): such a value needs no quoting in a script or a file name.
void check_plain_token(std::string_view value, std::string_view what);

// Throws std::invalid_argument naming `what` if `value` holds a newline, a carriage return or a NUL: one
// such character would end an #SBATCH line or a line of the cells file and start another.
void check_single_line(std::string_view value, std::string_view what);

}  // namespace gradsweep::experiment::slurm
