// SPDX-License-Identifier: GPL-3.0-or-later
// A regular file mapped read-only (mappedfile.h).
#include "mappedfile.h"

#include "attnviz/fileio.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace attnviz {

namespace detail {

MappedFile::~MappedFile()
{
    if (data)
        ::munmap(const_cast<unsigned char *>(data), size_t(size));
}

Status MappedFile::map(const std::string &path, std::unique_ptr<MappedFile> &out)
{
    uint64_t size = 0;
    if (Status st = regularFileSize(path, size); !st)
        return st;
    auto m = std::make_unique<MappedFile>();
    m->path = path;
    if (size > 0) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return Status::error(StatusCode::IoError, path + ": cannot open: " + std::strerror(errno));
        void *p = ::mmap(nullptr, size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
        const int err = errno;
        ::close(fd);
        if (p == MAP_FAILED)
            return Status::error(StatusCode::IoError, path + ": cannot map: " + std::strerror(err));
        m->data = static_cast<const unsigned char *>(p);
        m->size = size;
    }
    out = std::move(m);
    return {};
}

} // namespace detail

} // namespace attnviz
