#include "data/regex_split.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <stdexcept>

namespace gradsweep::data {
namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(code, buffer, sizeof buffer);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<const char*>(buffer));
}

// Per thread, reused across calls: the match data (only the whole match's offsets are read) and a JIT stack
// larger than PCRE2's 32 KiB default, which a long run of whitespace against \s+(?!\S) can exhaust.
struct MatchState {
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_jit_stack* jit_stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);

  MatchState() {
    if (data == nullptr || context == nullptr) throw std::bad_alloc();
    // Without JIT support the stack is null and the interpreter runs: nothing to assign.
    if (jit_stack != nullptr) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(jit_stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

// Length of the UTF-8 character at text[i] (1 for a byte that does not start a valid one): where the search
// resumes after an empty match.
size_t char_length(std::string_view text, size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  const size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
  if (i + len > text.size()) return 1;
  for (size_t k = 1; k < len; ++k) {
    if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) return 1;
  }
  return len;
}

}  // namespace

struct RegexSplit::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplit::RegexSplit(const std::string& pattern, bool literal) : pattern_(pattern) {
  // UCP: \s, \w, \d and POSIX classes by Unicode properties, as Oniguruma's do for UTF-8 text.
  // MATCH_INVALID_UTF: text need not be valid UTF-8 (see the header).
  // A literal has no classes for UCP to change (PCRE2 refuses the two together).
  const uint32_t options = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : PCRE2_UCP);
  int error = 0;
  PCRE2_SIZE offset = 0;
  auto compiled = std::make_shared<Compiled>();
  compiled->code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options, &error, &offset, nullptr);
  if (compiled->code == nullptr) {
    throw std::invalid_argument("regular expression \"" + pattern + "\" does not compile: " + pcre2_message(error) +
                                " at offset " + std::to_string(offset));
  }
  // JIT is several times faster; where PCRE2 was built without it the interpreter gives the same matches.
  (void)pcre2_jit_compile(compiled->code, PCRE2_JIT_COMPLETE);
  compiled_ = std::move(compiled);
}

void RegexSplit::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  MatchState& state = match_state();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t piece_start = 0;  // end of the last piece appended
  size_t search = 0;       // where the next search starts
  while (search <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), search, 0, state.data, state.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    // rc == 0: the match data has room for fewer groups than the pattern has, but the whole match is there.
    if (rc < 0) throw std::runtime_error("regular expression \"" + pattern_ + "\": " + pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state.data);
    const size_t start = ovector[0], end = ovector[1];
    if (start > piece_start) pieces.push_back(text.substr(piece_start, start - piece_start));
    if (end > start) {
      pieces.push_back(text.substr(start, end - start));
      piece_start = end;
      search = end;
    } else {
      // An empty match: the text before it is a piece of its own; search again one character on.
      piece_start = std::max(piece_start, start);
      if (end >= text.size()) break;
      search = end + char_length(text, end);
    }
  }
  if (piece_start < text.size()) pieces.push_back(text.substr(piece_start));
}

}  // namespace gradsweep::data
