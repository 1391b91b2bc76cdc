#include "architecture/include_layers.hpp"

#include "architecture/markdown_table.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

std::vector<fs::path> files_under(const fs::path& folder, const std::set<std::string>& names_ending) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    for (const auto& end : names_ending)
      if (entry.is_regular_file() && name.size() >= end.size() &&
          name.compare(name.size() - end.size(), end.size(), end) == 0)
        files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<fs::path> sources_under(const fs::path& folder) { return files_under(folder, {".cpp", ".hpp"}); }

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// The text with comments, string and character literals and preprocessor lines blanked (newlines kept),
// so that a namespace named in a comment or a message is not taken for a declaration.
std::string code_only(const std::string& text) {
  std::string out = text;
  const std::size_t n = text.size();
  const auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < std::min(to, n); ++k)
      if (out[k] != '\n') out[k] = ' ';
    return std::min(to, n);
  };
  const auto ends_at = [&](std::size_t from, const std::string& end) {
    const std::size_t at = text.find(end, from);
    return at == std::string::npos ? n : at + end.size();
  };
  bool line_start = true;
  for (std::size_t i = 0; i < n;) {
    const char c = text[i];
    if (c == '\n' || (line_start && (c == ' ' || c == '\t'))) {
      line_start = c == '\n' || line_start;
      ++i;
    } else if (line_start && c == '#') {  // a directive, with its continued lines
      std::size_t j = i;
      while (j < n && text[j] != '\n') j += text[j] == '\\' ? 2 : 1;
      i = blank(i, j);
    } else if (text.compare(i, 2, "//") == 0) {
      i = blank(i, text.find('\n', i));
    } else if (text.compare(i, 2, "/*") == 0) {
      i = blank(i, ends_at(i + 2, "*/"));
    } else if (c == 'R' && i + 1 < n && text[i + 1] == '"' && (i == 0 || !is_word(text[i - 1]) || text[i - 1] == '8')) {
      const std::size_t open = text.find('(', i + 2);
      i = open == std::string::npos ? blank(i, n)
                                    : blank(i, ends_at(open, ")" + text.substr(i + 2, open - i - 2) + "\""));
    } else if (c == '"' || (c == '\'' && (i == 0 || !std::isxdigit(static_cast<unsigned char>(text[i - 1]))))) {
      std::size_t j = i + 1;
      while (j < n && text[j] != c) j += text[j] == '\\' ? 2 : 1;
      i = blank(i, j + 1);
    } else {
      line_start = false;
      ++i;
    }
  }
  return out;
}

// The namespaces `text` opens outside any named namespace, with their lines: only these say which
// namespace a file's declarations land in.
std::vector<std::pair<int, std::string>> outer_namespaces(const std::string& text) {
  static const std::regex kOpening(R"((^|[^A-Za-z0-9_])namespace\s*([A-Za-z_][A-Za-z0-9_:]*)?\s*$)");
  const std::string code = code_only(text);
  std::vector<std::pair<int, std::string>> found;
  std::vector<bool> named;  // one per open brace: whether it opened a named namespace
  std::size_t statement = 0;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '{') {
      std::smatch m;
      const std::string before = code.substr(statement, i - statement);
      const bool is_namespace = std::regex_search(before, m, kOpening);
      const bool is_named = is_namespace && m[2].matched;
      if (is_named && std::find(named.begin(), named.end(), true) == named.end()) {
        const auto at = static_cast<std::ptrdiff_t>(statement + static_cast<std::size_t>(m.position(2)));
        found.emplace_back(1 + static_cast<int>(std::count(code.begin(), code.begin() + at, '\n')), m[2].str());
      }
      named.push_back(is_named);
    } else if (c == '}' && !named.empty()) {
      named.pop_back();
    }
    if (c == '{' || c == '}' || c == ';') statement = i + 1;
  }
  return found;
}

// One source a CMakeLists.txt under host/ compiles: which file, which command, into which target.
struct Compiled {
  fs::path cmake;  // relative to host/
  std::string target;
  fs::path source;  // relative to host/
};

std::vector<Compiled> compiled_sources(const fs::path& host_root) {
  static const std::regex kCommand(
      R"(\b(add_library|add_executable|target_sources)\s*\(\s*([A-Za-z0-9_.+-]+)([^)]*)\))");
  static const std::regex kComment("#[^\n]*");
  std::vector<Compiled> compiled;
  for (const auto& cmake : files_under(host_root, {"CMakeLists.txt"})) {
    const std::string text = std::regex_replace(read_text(cmake), kComment, "");
    const fs::path dir = cmake.parent_path();
    for (std::sregex_iterator it(text.begin(), text.end(), kCommand), end; it != end; ++it) {
      std::stringstream args((*it)[3].str());
      for (std::string word; args >> word;) {
        if (word.size() < 4 || word.compare(word.size() - 4, 4, ".cpp") != 0) continue;
        for (const auto& [var, value] : {std::pair<std::string, fs::path>{"${CMAKE_CURRENT_SOURCE_DIR}/", dir},
                                         std::pair<std::string, fs::path>{"${PROJECT_SOURCE_DIR}/host/", host_root}})
          if (word.rfind(var, 0) == 0) word = (value / word.substr(var.size())).string();
        if (word.find("${") != std::string::npos) continue;  // outside host/ (scripts/gpu/nccl_check.cpp)
        const fs::path source = fs::path(word).is_absolute() ? fs::path(word) : dir / word;
        compiled.push_back({fs::relative(cmake, host_root), (*it)[2].str(),
                            source.lexically_normal().lexically_relative(host_root.lexically_normal())});
      }
    }
  }
  return compiled;
}

std::string first_part(const fs::path& relative) {
  return relative.begin() == relative.end() ? "" : relative.begin()->string();
}

}  // namespace

std::vector<Layer> parse_layers(const std::string& markdown) {
  static const std::regex kRow(R"(^\|\s*`host/([a-z_]+)/`\s*\|.*)");
  std::vector<Layer> layers;
  for (const std::string& line : section_lines(markdown, "## Layers")) {
    std::smatch m;
    if (!std::regex_match(line, m, kRow)) continue;
    const auto cells = cells_of(line);
    if (cells.size() < 3) continue;
    layers.push_back({m[1], quoted_words(cells[1]), quoted_words(cells[2])});
  }
  return layers;
}

std::vector<std::string> table_problems(const std::vector<Layer>& layers) {
  std::vector<std::string> problems;
  std::set<std::string> below;
  for (const auto& layer : layers) {
    for (const auto& dep : layer.may_include)
      if (!below.count(dep))
        problems.push_back("host/" + layer.folder + "/ may include " + dep + ", which is not in a row above it");
    below.insert(layer.folder);
  }
  return problems;
}

std::vector<std::string> include_problems(const fs::path& host_root, const std::vector<Layer>& layers) {
  static const std::regex kInclude(R"(^\s*#\s*include\s+["<]([a-z_]+)/([^">]*)[">])");
  std::set<std::string> folders;
  for (const auto& layer : layers) folders.insert(layer.folder);
  std::vector<std::string> problems;
  for (const auto& layer : layers) {
    if (!fs::is_directory(host_root / layer.folder)) continue;
    const std::set<std::string> allowed(layer.may_include.begin(), layer.may_include.end());
    const std::string rule =
        layer.may_include.empty() ? "may include nothing of host/" : "may include only " + listed(layer.may_include);
    for (const auto& file : sources_under(host_root / layer.folder)) {
      std::ifstream in(file);
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        std::smatch m;
        if (!std::regex_search(line, m, kInclude)) continue;
        const std::string target = m[1];
        if (target == layer.folder || !folders.count(target) || allowed.count(target)) continue;
        problems.push_back(fs::relative(file, host_root).string() + ":" + std::to_string(number) + " includes " +
                           target + "/" + m[2].str() + ": host/" + layer.folder + "/ " + rule);
      }
    }
  }
  return problems;
}

std::vector<std::string> namespace_problems(const fs::path& host_root, const std::vector<Layer>& layers) {
  std::vector<std::string> problems;
  for (const auto& layer : layers) {
    if (!fs::is_directory(host_root / layer.folder)) continue;
    const std::string own = "gradsweep::" + layer.folder;
    for (const auto& file : sources_under(host_root / layer.folder))
      for (const auto& [line, name] : outer_namespaces(read_text(file)))
        if (name != own && name.rfind(own + "::", 0) != 0)
          problems.push_back(fs::relative(file, host_root).string() + ":" + std::to_string(line) +
                             " declares namespace " + name + ": host/" + layer.folder + "/ declares only " + own);
  }
  return problems;
}

std::vector<std::string> target_problems(const fs::path& host_root, const std::vector<Layer>& layers) {
  std::map<std::string, std::vector<std::string>> targets_of;
  for (const auto& layer : layers) targets_of[layer.folder] = layer.targets;
  std::vector<std::string> problems;
  std::set<fs::path> named;
  for (const auto& c : compiled_sources(host_root)) {
    const std::string owner = c.source.has_parent_path() ? first_part(c.source) : "";
    if (!targets_of.count(owner)) continue;  // host/main.cpp
    named.insert(c.source);
    const auto& targets = targets_of[owner];
    if (first_part(c.cmake.parent_path()) != owner)
      problems.push_back(c.cmake.string() + " compiles " + c.source.string() + " into " + c.target + ": host/" + owner +
                         "/'s sources belong in host/" + owner + "/CMakeLists.txt");
    else if (std::find(targets.begin(), targets.end(), c.target) == targets.end())
      problems.push_back(c.cmake.string() + " compiles " + c.source.string() + " into " + c.target + ", not into " +
                         listed(targets) + " (host/" + owner + "/'s row)");
  }
  for (const auto& layer : layers) {
    if (!fs::is_directory(host_root / layer.folder)) continue;
    for (const auto& file : files_under(host_root / layer.folder, {".cpp"})) {
      const fs::path source = fs::relative(file, host_root);
      if (!named.count(source))
        problems.push_back(source.string() + " is compiled by no CMakeLists.txt of host/" + layer.folder + "/");
    }
  }
  return problems;
}

std::vector<std::string> link_problems(const fs::path& host_root, const std::vector<Layer>& layers) {
  static const std::regex kLink(R"(\btarget_link_libraries\s*\(\s*([A-Za-z0-9_.+-]+)([^)]*)\))");
  static const std::regex kComment("#[^\n]*");
  std::map<std::string, std::string> folder_of_target;
  std::map<std::string, const Layer*> layer_of;
  for (const auto& layer : layers) {
    layer_of[layer.folder] = &layer;
    for (const auto& target : layer.targets) folder_of_target[target] = layer.folder;
  }
  std::vector<std::string> problems;
  for (const auto& cmake : files_under(host_root, {"CMakeLists.txt"})) {
    const fs::path relative = fs::relative(cmake, host_root);
    const std::string owner = first_part(relative.parent_path());
    if (!layer_of.count(owner)) continue;  // host/CMakeLists.txt: the executable over gradsweep_cli
    const Layer& layer = *layer_of[owner];
    const std::set<std::string> allowed(layer.may_include.begin(), layer.may_include.end());
    const std::string text = std::regex_replace(read_text(cmake), kComment, "");
    for (std::sregex_iterator it(text.begin(), text.end(), kLink), end; it != end; ++it) {
      std::stringstream args((*it)[2].str());
      for (std::string word; args >> word;) {
        if (!folder_of_target.count(word)) continue;
        const std::string& folder = folder_of_target[word];
        if (folder == owner || allowed.count(folder)) continue;
        problems.push_back(relative.string() + " links " + word + " (host/" + folder + "/) into " + (*it)[1].str() +
                           ": host/" + owner + "/ may include only " + listed(layer.may_include));
      }
    }
  }
  return problems;
}

std::vector<std::string> unused_permissions(const fs::path& host_root, const std::vector<Layer>& layers) {
  static const std::regex kInclude(R"(^\s*#\s*include\s+["<]([a-z_]+)/)");
  std::vector<std::string> problems;
  for (const auto& layer : layers) {
    if (!fs::is_directory(host_root / layer.folder)) continue;
    std::set<std::string> included;
    for (const auto& file : sources_under(host_root / layer.folder)) {
      std::ifstream in(file);
      for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (std::regex_search(line, m, kInclude)) included.insert(m[1]);
      }
    }
    for (const auto& dep : layer.may_include)
      if (!included.count(dep))
        problems.push_back("host/" + layer.folder + "/ may include " + dep + ", which none of its files includes");
  }
  return problems;
}

}  // namespace gradsweep::test
