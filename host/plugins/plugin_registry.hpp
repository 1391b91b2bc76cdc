#pragma once
// Finds plugin libraries, checks their descriptors, and keeps the accepted ones loaded.
//
// A library is accepted only if its descriptor matches this host: same ABI major, a minor no newer than
// the host's, the same LibTorch major.minor and the same C++ string ABI. Everything else is recorded as
// refused with a reason that names the file and both sides' versions. Accepted libraries are never
// unloaded: objects, vtables and deleters from them may live until the process exits.
#include <gradsweep/sdk/abi.hpp>

#include <boost/dll/shared_library.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace gradsweep::plugins {

struct PluginRecord {
  std::string name;
  sdk::PluginKind kind;
  std::string version;
  std::string summary;
  std::filesystem::path path;
  const sdk::PluginDescriptor* descriptor;  // valid for the life of the process
};

struct RefusedPlugin {
  std::filesystem::path path;
  std::string reason;
};

// Human-readable build fingerprint: "torch 1.13, cxx11-abi 1, gcc 12.2.0, cuda none, nccl none".
std::string describe(const sdk::BuildFingerprint& build);

// Returns the reason a descriptor cannot be used by this host, or "" when it can.
std::string incompatibility(const sdk::PluginDescriptor& descriptor, const std::filesystem::path& path);

class PluginRegistry {
 public:
  // The search path: `extra` (from the experiment), then $GRADSWEEP_PLUGIN_PATH (colon-separated), then
  // the plugin directory next to the executable (build tree or install tree). Never the working directory.
  static std::vector<std::filesystem::path> search_path(const std::vector<std::filesystem::path>& extra);

  // Loads every shared library in `directories` (non-recursive, in name order). A name already taken by
  // an earlier directory shadows later ones; the shadowed file is listed as refused.
  void scan(const std::vector<std::filesystem::path>& directories);
  // Loads one library file (tests, and `gradsweep plugins --file`).
  void load_file(const std::filesystem::path& path);

  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  const std::vector<RefusedPlugin>& refused() const { return refused_; }

  // The plugin of that kind and name; otherwise throws an error listing the available ones (and any
  // refused file that might have been meant).
  const PluginRecord& find(sdk::PluginKind kind, const std::string& name) const;
  const PluginRecord* try_find(sdk::PluginKind kind, const std::string& name) const;

 private:
  std::vector<PluginRecord> plugins_;
  std::vector<RefusedPlugin> refused_;
  std::vector<boost::dll::shared_library> libraries_;
};

}  // namespace gradsweep::plugins
