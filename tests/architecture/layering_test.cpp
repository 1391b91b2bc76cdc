// The host's layers, as docs/architecture.md#layers states them, against its includes: every
// `#include "folder/..."` of a file in host/<folder>/ names its own folder or one the table lets it
// include, and the table only lets a folder include folders in rows above it, so that dependencies go
// downward and no cycle can form. Each folder is also one namespace, gradsweep::<folder>, and its sources are
// compiled, by its own CMakeLists.txt, into the targets its row names. The table is read from the page a
// newcomer reads, so the map and the check cannot drift apart. No LibTorch: this binary links GoogleTest alone.
#include "architecture/folder_parts.hpp"
#include "architecture/include_layers.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

namespace gradsweep::test {
namespace {
namespace fs = std::filesystem;

const fs::path kSource = GRADSWEEP_TEST_SOURCE_DIR;

std::string read_file(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

TEST(Layering, TheTableCoversEveryHostFolderAndOnlyPointsDown) {
  const auto layers = parse_layers(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(layers.size(), 10u) << "docs/architecture.md has no ## Layers table";
  EXPECT_EQ(joined(table_problems(layers)), "");
  std::set<std::string> listed;
  for (const auto& layer : layers) listed.insert(layer.folder);
  for (const auto& entry : fs::directory_iterator(kSource / "host"))
    if (entry.is_directory()) {
      EXPECT_TRUE(listed.count(entry.path().filename().string()))
          << "host/" << entry.path().filename().string() << "/ is not in docs/architecture.md's ## Layers table";
    }
  for (const auto& folder : listed) EXPECT_TRUE(fs::is_directory(kSource / "host" / folder)) << folder;
}

TEST(Layering, EveryHostIncludeGoesToItsOwnFolderOrALowerOne) {
  const auto layers = parse_layers(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(layers.size(), 10u);
  EXPECT_EQ(joined(include_problems(kSource / "host", layers)), "");
}

TEST(Layering, EachFolderDeclaresOnlyItsOwnNamespace) {
  const auto layers = parse_layers(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(layers.size(), 10u);
  EXPECT_EQ(joined(namespace_problems(kSource / "host", layers)), "");
}

TEST(Layering, EachFolderIsCompiledIntoTheTargetsItsRowNames) {
  const auto layers = parse_layers(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(layers.size(), 10u);
  for (const auto& layer : layers)
    EXPECT_FALSE(layer.targets.empty()) << "host/" << layer.folder << "/ names no target";
  EXPECT_EQ(joined(target_problems(kSource / "host", layers)), "");
}

TEST(Layering, EachFolderLinksOnlyTheFoldersItMayIncludeAndMayIncludeOnlyWhatItUses) {
  const auto layers = parse_layers(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(layers.size(), 10u);
  EXPECT_EQ(joined(link_problems(kSource / "host", layers)), "");
  EXPECT_EQ(joined(unused_permissions(kSource / "host", layers)), "");
}

TEST(Layering, AFolderSplitIntoPartsHasEveryFileInAPartAndItsPartsPointDown) {
  const auto parts = parse_parts(read_file(kSource / "docs" / "architecture.md"));
  ASSERT_GE(parts.size(), 8u) << "docs/architecture.md has no ## Parts of a folder table";
  EXPECT_EQ(joined(part_table_problems(parts)), "");
  EXPECT_EQ(joined(part_problems(kSource / "host", parts)), "");
}

// The parts check on a tree of its own: a file outside the folder's parts, a sub-folder that is no part,
// and an include from a lower part to a higher one are named; the same include downward is not.
TEST(Layering, APartsProblemIsNamedWithFileAndLine) {
  const fs::path root =
      fs::temp_directory_path() / ("parts-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(root);
  write_file(root / "box" / "low" / "a.hpp", "#pragma once\n#include \"box/high/b.hpp\"\n");
  write_file(root / "box" / "high" / "b.cpp", "#include \"box/low/a.hpp\"\n#include \"box/high/b.hpp\"\n");
  write_file(root / "box" / "stray.cpp", "// no part\n");
  write_file(root / "box" / "extra" / "c.cpp", "\n");
  write_file(root / "box" / "CMakeLists.txt", "\n");
  const auto parts = parse_parts(
      "## Layers\n| `host/box/low/` | `t` | — |\n## Parts of a folder\n| part | holds | may include |\n"
      "|---|---|---|\n| `host/box/low/` | the `a` file | — |\n| `host/box/high/` | `b` | `low` |\n");
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[1].may_include, std::vector<std::string>{"low"});
  EXPECT_TRUE(part_table_problems(parts).empty());
  const auto problems = part_problems(root, parts);
  ASSERT_EQ(problems.size(), 3u) << joined(problems);
  EXPECT_EQ(problems[0], "host/box/extra/ is not a part of host/box/ in docs/architecture.md's ## Parts of a folder");
  EXPECT_EQ(problems[1], "box/stray.cpp lies in host/box/ itself, outside its parts (high, low)");
  EXPECT_EQ(problems[2],
            "box/low/a.hpp:2 includes box/high/b.hpp: host/box/low/ may include no other part of host/box/");
  const auto upward = part_table_problems(parse_parts("## Parts of a folder\n| `host/box/low/` | x | `high` |\n"));
  ASSERT_EQ(upward.size(), 1u);
  EXPECT_EQ(upward[0], "host/box/low/ may include high, which is not a part of host/box/ in a row above it");
  fs::remove_all(root);
}

// The link and tightness checks on a tree of their own: a link to a folder the row does not allow is named
// with its CMakeLists.txt; a permission no file uses is named too.
TEST(Layering, ALinkAboveTheTableOrAPermissionNoFileUsesIsNamed) {
  const fs::path root =
      fs::temp_directory_path() / ("links-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(root);
  write_file(root / "low" / "CMakeLists.txt", "add_library(t_low STATIC a.cpp)\n");
  write_file(root / "mid" / "CMakeLists.txt",
             "add_library(t_mid STATIC b.cpp)\n# target_link_libraries(t_mid PUBLIC t_side)\n"
             "target_link_libraries(t_mid PUBLIC t_low t_side Threads::Threads)\n");
  write_file(root / "side" / "CMakeLists.txt", "add_library(t_side STATIC c.cpp)\n");
  write_file(root / "mid" / "b.cpp", "#include <vector>\n");
  const auto layers = parse_layers(
      "## Layers\n| `host/low/` | `t_low` | — |\n| `host/side/` | `t_side` | — |\n| `host/mid/` | `t_mid` | `low` |\n");
  const auto links = link_problems(root, layers);
  ASSERT_EQ(links.size(), 1u) << joined(links);
  EXPECT_EQ(links[0], "mid/CMakeLists.txt links t_side (host/side/) into t_mid: host/mid/ may include only low");
  const auto unused = unused_permissions(root, layers);
  ASSERT_EQ(unused.size(), 1u) << joined(unused);
  EXPECT_EQ(unused[0], "host/mid/ may include low, which none of its files includes");
  fs::remove_all(root);
}

// The check itself, on a tree of its own: an include that goes up or sideways is named with its file,
// line and what the folder may include; a table that lets a folder include one below it is refused.
TEST(Layering, AnUpwardOrSidewaysIncludeIsNamedWithFileAndLine) {
  const fs::path root =
      fs::temp_directory_path() / ("layering-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(root);
  write_file(root / "low" / "a.hpp", "#pragma once\n#include <vector>\n");
  write_file(root / "mid" / "b.cpp", "#include \"low/a.hpp\"\n#include \"mid/b.hpp\"\n");
  write_file(root / "side" / "c.cpp", "#include \"low/a.hpp\"\n");
  write_file(root / "low" / "deep" / "d.cpp", "// why\n#include \"mid/b.hpp\"\n");
  write_file(root / "mid" / "e.cpp", "#include <side/c.hpp>\n#include <vector>\n");
  const std::string table =
      "# Page\n## Layers\n| folder | target | may include |\n|---|---|---|\n"
      "| `host/low/` | `t_low` | — |\n| `host/mid/` | `t_mid` | `low` |\n| `host/side/` | `t_side` | `low` |\n"
      "## Next\n| `host/ignored/` | `x` | `mid` |\n";
  const auto layers = parse_layers(table);
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[1].folder, "mid");
  EXPECT_EQ(layers[1].may_include, std::vector<std::string>{"low"});
  EXPECT_TRUE(table_problems(layers).empty());

  const auto problems = include_problems(root, layers);
  ASSERT_EQ(problems.size(), 2u) << joined(problems);
  EXPECT_EQ(problems[0], "low/deep/d.cpp:2 includes mid/b.hpp: host/low/ may include nothing of host/");
  EXPECT_EQ(problems[1], "mid/e.cpp:1 includes side/c.hpp: host/mid/ may include only low");

  const auto upward =
      parse_layers("## Layers\n| `host/low/` | `t` | `mid` |\n| `host/mid/` | `t` | `low`, `nowhere` |\n");
  const auto refused = table_problems(upward);
  ASSERT_EQ(refused.size(), 2u) << joined(refused);
  EXPECT_EQ(refused[0], "host/low/ may include mid, which is not in a row above it");
  EXPECT_EQ(refused[1], "host/mid/ may include nowhere, which is not in a row above it");
  fs::remove_all(root);
}

// The namespace and target checks on a tree of their own: a file that opens another folder's namespace (or
// a namespace of no folder) is named with its line, whatever is nested inside its own or written in comments
// and strings; a source compiled into another row's target, compiled from another folder's CMakeLists.txt,
// or compiled by none, is named too.
TEST(Layering, AWrongNamespaceOrTargetIsNamedWithFileAndLine) {
  const fs::path root =
      fs::temp_directory_path() / ("namespaces-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  fs::remove_all(root);
  write_file(root / "low" / "a.hpp",
             "#pragma once\n// namespace gradsweep::mid {\nnamespace gradsweep::low {\nnamespace detail {\n"
             "const char* k = \"namespace gradsweep::mid {\";\n}\nnamespace {\n}\n}  // namespace gradsweep::low\n"
             "namespace gradsweep::low::deep {\nstruct S {\n  int f() { return 1; }\n};\n}\n");
  write_file(root / "low" / "a.cpp", "#include \"low/a.hpp\"\nnamespace {\n}\nnamespace gradsweep::low {\n}\n");
  write_file(root / "mid" / "b.cpp", "#include \"mid/b.hpp\"\n\nnamespace gradsweep::low {\nvoid g();\n}\n");
  write_file(root / "mid" / "c.hpp",
             "#pragma once\nnamespace gradsweep {\nnamespace mid {\n}\n}\nnamespace\nCLI {\n}\n");
  write_file(root / "mid" / "d.cpp", "namespace gradsweep::mid {\n}\n");
  write_file(root / "mid" / "e.cpp", "namespace gradsweep::middle {\n}\n");
  write_file(root / "low" / "CMakeLists.txt", "# mid/b.cpp\nadd_library(t_low STATIC a.cpp)\n");
  write_file(root / "mid" / "CMakeLists.txt",
             "add_library(t_mid STATIC\n  b.cpp)\ntarget_sources(t_low PRIVATE d.cpp)\n");
  write_file(root / "CMakeLists.txt", "add_subdirectory(low)\nadd_library(t_mid2 STATIC mid/e.cpp)\n");
  const auto layers =
      parse_layers("## Layers\n| `host/low/` | `t_low` | — |\n| `host/mid/` | `t_mid`, `t_mid_tool` | `low` |\n");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_EQ(layers[1].targets, (std::vector<std::string>{"t_mid", "t_mid_tool"}));

  const auto names = namespace_problems(root, layers);
  ASSERT_EQ(names.size(), 4u) << joined(names);
  EXPECT_EQ(names[0], "mid/b.cpp:3 declares namespace gradsweep::low: host/mid/ declares only gradsweep::mid");
  EXPECT_EQ(names[1], "mid/c.hpp:2 declares namespace gradsweep: host/mid/ declares only gradsweep::mid");
  EXPECT_EQ(names[2], "mid/c.hpp:7 declares namespace CLI: host/mid/ declares only gradsweep::mid");
  EXPECT_EQ(names[3], "mid/e.cpp:1 declares namespace gradsweep::middle: host/mid/ declares only gradsweep::mid");

  const auto targets = target_problems(root, layers);
  ASSERT_EQ(targets.size(), 2u) << joined(targets);
  EXPECT_EQ(targets[0],
            "CMakeLists.txt compiles mid/e.cpp into t_mid2: host/mid/'s sources belong in host/mid/CMakeLists.txt");
  EXPECT_EQ(targets[1],
            "mid/CMakeLists.txt compiles mid/d.cpp into t_low, not into t_mid, t_mid_tool (host/mid/'s row)");

  fs::remove(root / "CMakeLists.txt");
  const auto unlisted = target_problems(root, layers);
  ASSERT_EQ(unlisted.size(), 2u) << joined(unlisted);
  EXPECT_EQ(unlisted[1], "mid/e.cpp is compiled by no CMakeLists.txt of host/mid/");
  fs::remove_all(root);
}

}  // namespace
}  // namespace gradsweep::test
