#include "vgpu/volumes/elf_info.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

namespace vgpu::volumes {
namespace {

class Reader {
 public:
  Reader(int fd, const std::string& name, off_t size) : fd_(fd), name_(name), size_(size) {}
  Status Read(uint64_t offset, void* buf, size_t len) const {
    if (offset > static_cast<uint64_t>(size_) || len > static_cast<uint64_t>(size_) - offset) {
      return InvalidArgumentError(name_ + ": not a valid ELF file (reference past end of file)");
    }
    ssize_t got = pread(fd_, buf, len, static_cast<off_t>(offset));
    if (got < 0) return ErrnoError("read " + name_, errno);
    if (static_cast<size_t>(got) != len) return InvalidArgumentError(name_ + ": short read");
    return OkStatus();
  }
  const std::string& name() const { return name_; }
  uint64_t size() const { return static_cast<uint64_t>(size_); }

 private:
  int fd_;
  const std::string& name_;
  off_t size_;
};

// One implementation for both classes: the Elf32_* and Elf64_* structs share field names.
template <typename Ehdr, typename Phdr, typename Dyn>
Result<ElfInfo> Parse(const Reader& r, int bits) {
  Ehdr eh;
  VGPU_RETURN_IF_ERROR(r.Read(0, &eh, sizeof(eh)));
  if (eh.e_phentsize != sizeof(Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) {
    return InvalidArgumentError(r.name() + ": ELF without usable program headers");
  }
  std::vector<Phdr> phdrs(eh.e_phnum);
  VGPU_RETURN_IF_ERROR(r.Read(eh.e_phoff, phdrs.data(), sizeof(Phdr) * phdrs.size()));

  ElfInfo info;
  info.bits = bits;
  const Phdr* dynamic = nullptr;
  for (const Phdr& ph : phdrs) {
    if (ph.p_type == PT_DYNAMIC) dynamic = &ph;
  }
  if (dynamic == nullptr) return info;  // static executable: no soname
  if (dynamic->p_filesz > (1u << 20)) {
    return InvalidArgumentError(r.name() + ": implausible dynamic section size");
  }
  std::vector<Dyn> dyns(dynamic->p_filesz / sizeof(Dyn));
  VGPU_RETURN_IF_ERROR(r.Read(dynamic->p_offset, dyns.data(), sizeof(Dyn) * dyns.size()));
  uint64_t strtab_vaddr = 0, strsz = 0, soname_off = 0;
  bool has_strtab = false, has_soname = false;
  for (const Dyn& d : dyns) {
    if (d.d_tag == DT_NULL) break;
    if (d.d_tag == DT_STRTAB) {
      strtab_vaddr = d.d_un.d_ptr;
      has_strtab = true;
    } else if (d.d_tag == DT_STRSZ) {
      strsz = d.d_un.d_val;
    } else if (d.d_tag == DT_SONAME) {
      soname_off = d.d_un.d_val;
      has_soname = true;
    }
  }
  if (!has_soname) return info;
  if (!has_strtab || soname_off >= strsz) {
    return InvalidArgumentError(r.name() + ": DT_SONAME outside the string table");
  }
  // DT_STRTAB is a virtual address: find the PT_LOAD segment holding it.
  for (const Phdr& ph : phdrs) {
    if (ph.p_type != PT_LOAD || strtab_vaddr < ph.p_vaddr ||
        strtab_vaddr - ph.p_vaddr >= ph.p_filesz) {
      continue;
    }
    const uint64_t offset = ph.p_offset + (strtab_vaddr - ph.p_vaddr) + soname_off;
    if (offset >= r.size()) {
      return InvalidArgumentError(r.name() + ": DT_SONAME past end of file");
    }
    const uint64_t len = std::min<uint64_t>({strsz - soname_off, 4096, r.size() - offset});
    std::string buf(len, '\0');
    VGPU_RETURN_IF_ERROR(r.Read(offset, buf.data(), buf.size()));
    const size_t nul = buf.find('\0');
    if (nul != std::string::npos) {
      info.soname = buf.substr(0, nul);
      return info;
    }
    return InvalidArgumentError(r.name() + ": unterminated DT_SONAME");
  }
  return InvalidArgumentError(r.name() + ": DT_STRTAB not in any PT_LOAD segment");
}

}  // namespace

Result<ElfInfo> ReadElfInfoFd(int fd, const std::string& name) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("stat " + name, errno);
  Reader r(fd, name, st.st_size);
  unsigned char ident[EI_NIDENT];
  if (!r.Read(0, ident, sizeof(ident)).ok() || std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return InvalidArgumentError(name + ": not an ELF file");
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    return InvalidArgumentError(name + ": big-endian ELF is not supported");
  }
  if (ident[EI_CLASS] == ELFCLASS64) return Parse<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn>(r, 64);
  if (ident[EI_CLASS] == ELFCLASS32) return Parse<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn>(r, 32);
  return InvalidArgumentError(name + ": unknown ELF class");
}

Result<ElfInfo> ReadElfInfo(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path, errno);
  Result<ElfInfo> info = ReadElfInfoFd(fd, path);
  close(fd);
  return info;
}

}  // namespace vgpu::volumes
