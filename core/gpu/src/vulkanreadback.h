// SPDX-License-Identifier: GPL-3.0-or-later
// Readbacks of storage buffers for RhiForward's frames (the model forward and the attention op): on
// Vulkan, copies into persistent host-visible buffers recorded at the end of a frame's last compute
// pass (QRhi 6.4 would allocate and map a staging buffer per readback, then copy it once more);
// elsewhere QRhi's readbacks.
#pragma once

#include <QtGui/private/qrhi_p.h>
#if QT_CONFIG(vulkan)
#include <QVulkanFunctions>
#include <QVulkanInstance>
#include <QtGui/private/qrhivulkan_p.h>
#endif

#include <algorithm>
#include <vector>

namespace attnviz {

// One buffer range to bring back to the host, and where it goes.
struct ReadItem {
    QRhiBuffer *buf;
    qint64 offset, bytes;
    void *dst;
};

// Vulkan only: persistent host-visible (cached where the device has it), coherent buffers, one per
// read item, reused while they are large enough; copies recorded with vkCmdCopyBuffer.
struct VulkanReadback {
#if QT_CONFIG(vulkan)
    struct Staging {
        VkBuffer buf = VK_NULL_HANDLE;
        VkDeviceMemory mem = VK_NULL_HANDLE;
        void *map = nullptr;
        qint64 size = 0;
    };
    VkDevice dev = VK_NULL_HANDLE;
    QVulkanDeviceFunctions *df = nullptr;
    VkPhysicalDeviceMemoryProperties memProps{};
    std::vector<Staging> staging;

    VulkanReadback(QVulkanInstance *inst, VkPhysicalDevice physDev, VkDevice device) : dev(device)
    {
        df = inst->deviceFunctions(dev);
        inst->functions()->vkGetPhysicalDeviceMemoryProperties(physDev, &memProps);
    }
    ~VulkanReadback()
    {
        for (Staging &s : staging)
            release(s);
    }
    void release(Staging &s)
    {
        if (s.map)
            df->vkUnmapMemory(dev, s.mem);
        if (s.buf)
            df->vkDestroyBuffer(dev, s.buf, nullptr);
        if (s.mem)
            df->vkFreeMemory(dev, s.mem, nullptr);
        s = {};
    }
    int memoryType(uint32_t bits) const
    {
        const VkMemoryPropertyFlags need = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
        int fallback = -1;
        for (uint32_t i = 0; i < memProps.memoryTypeCount; ++i) {
            const VkMemoryPropertyFlags f = memProps.memoryTypes[i].propertyFlags;
            if (!(bits & (1u << i)) || (f & need) != need)
                continue;
            if (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
                return int(i);
            if (fallback < 0)
                fallback = int(i);
        }
        return fallback;
    }
    bool ensure(Staging &s, qint64 bytes)
    {
        if (s.size >= bytes)
            return true;
        release(s);
        bytes = (bytes + (1 << 20) - 1) & ~qint64((1 << 20) - 1);
        VkBufferCreateInfo bi{};
        bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
        bi.size = VkDeviceSize(bytes);
        bi.usage = VK_BUFFER_USAGE_TRANSFER_DST_BIT;
        bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
        if (df->vkCreateBuffer(dev, &bi, nullptr, &s.buf) != VK_SUCCESS)
            return false;
        VkMemoryRequirements req;
        df->vkGetBufferMemoryRequirements(dev, s.buf, &req);
        const int type = memoryType(req.memoryTypeBits);
        VkMemoryAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        ai.allocationSize = req.size;
        ai.memoryTypeIndex = uint32_t(type);
        if (type < 0 || df->vkAllocateMemory(dev, &ai, nullptr, &s.mem) != VK_SUCCESS ||
            df->vkBindBufferMemory(dev, s.buf, s.mem, 0) != VK_SUCCESS ||
            df->vkMapMemory(dev, s.mem, 0, VK_WHOLE_SIZE, 0, &s.map) != VK_SUCCESS) {
            release(s);
            return false;
        }
        s.size = bytes;
        return true;
    }
    // Asks the driver for more memory than its largest heap holds, as weights larger than the device
    // do: true where it refuses (it then says so through its debug report, as for a real model).
    bool refusesMoreThanItHas()
    {
        VkDeviceSize largest = 0;
        for (uint32_t h = 0; h < memProps.memoryHeapCount; ++h)
            largest = std::max(largest, memProps.memoryHeaps[h].size);
        VkMemoryAllocateInfo ai{};
        ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
        // beyond the heap, and beyond what a process can map (a driver on host memory may map lazily)
        ai.allocationSize = std::max(largest * 2, VkDeviceSize(1) << 48);
        ai.memoryTypeIndex = 0;
        VkDeviceMemory mem = VK_NULL_HANDLE;
        if (df->vkAllocateMemory(dev, &ai, nullptr, &mem) != VK_SUCCESS)
            return true;
        df->vkFreeMemory(dev, mem, nullptr);
        return false;
    }
    // False (use QRhi's readbacks instead) where host memory cannot be had.
    bool prepare(const std::vector<ReadItem> &items)
    {
        if (staging.size() < items.size())
            staging.resize(items.size());
        for (size_t k = 0; k < items.size(); ++k)
            if (!ensure(staging[k], items[k].bytes))
                return false;
        return true;
    }
    // Inside the last compute pass (begun with ExternalContent), after its dispatch.
    void record(QRhiCommandBuffer *cb, const std::vector<ReadItem> &items)
    {
        cb->beginExternal();
        const VkCommandBuffer vcb =
            static_cast<const QRhiVulkanCommandBufferNativeHandles *>(cb->nativeHandles())->commandBuffer;
        VkMemoryBarrier toTransfer{};
        toTransfer.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        toTransfer.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
        toTransfer.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        df->vkCmdPipelineBarrier(vcb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                                 VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &toTransfer, 0, nullptr, 0, nullptr);
        for (size_t k = 0; k < items.size(); ++k) {
            const VkBuffer src = *static_cast<const VkBuffer *>(items[k].buf->nativeBuffer().objects[0]);
            VkBufferCopy region{VkDeviceSize(items[k].offset), 0, VkDeviceSize(items[k].bytes)};
            df->vkCmdCopyBuffer(vcb, src, staging[k].buf, 1, &region);
        }
        VkMemoryBarrier toHost{};
        toHost.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
        toHost.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
        toHost.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        df->vkCmdPipelineBarrier(vcb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &toHost, 0,
                                 nullptr, 0, nullptr);
        cb->endExternal();
    }
    const void *mapped(size_t k) const { return staging[k].map; }
#else
    bool prepare(const std::vector<ReadItem> &) { return false; }
    bool refusesMoreThanItHas() { return true; }
    void record(QRhiCommandBuffer *, const std::vector<ReadItem> &) {}
    const void *mapped(size_t) const { return nullptr; }
#endif
};

} // namespace attnviz
