#!/usr/bin/env bash
# Run on a Debian 12 build machine (network to Debian's mirrors): downloads the .deb files of the libraries
# that a CUDA machine with only a PyTorch wheel lacks, into gpu-debs/ (ignored by git), so that they can be
# carried there and unpacked by gpu_check.sh. LibTorch itself comes from the wheel on that machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p gpu-debs && cd gpu-debs
apt-get download \
  libyaml-cpp-dev libyaml-cpp0.7 libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 \
  libboost1.74-dev libboost-filesystem1.74-dev libboost-filesystem1.74.0 libboost-system1.74.0 \
  libcli11-dev nlohmann-json3-dev \
  libopenmpi-dev libopenmpi3 libhwloc15 libevent-core-2.1-7 libevent-pthreads-2.1-7 \
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 \
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32 \
  libcurl4-openssl-dev libcurl4
# Open MPI: headers and the link name (libopenmpi-dev), the library and what it loads at start
# (libopenmpi3, hwloc, libevent); gradsweep links it even when it trains alone on the NCCL backend.
# PCRE2: Hugging Face tokenizers' regular expressions (host/data/regex_split.cpp).
# Protocol buffers: TensorBoard's event files (host/tensorboard), compiled by protoc at build time.
# libcurl (OpenSSL flavour): MLflow tracking over HTTP (host/tracking).
ls -la
