// The fuzz input as a file, for the readers' file path (nn::open_file: pread into the tensors' buffers, the header read
// through a growing prefix): a memfd holding the bytes, opened by its /proc path as a user's file would be.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

inline std::string fuzz_file(const uint8_t* data, size_t size) {
  static int fd = memfd_create("fuzz", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 || (size && ::pwrite(fd, data, size, 0) != ssize_t(size))) std::abort();
  return "/proc/self/fd/" + std::to_string(fd);
}
