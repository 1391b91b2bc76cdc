// Anchor for the shared precompiled LibTorch header (see CMakeLists.txt).
