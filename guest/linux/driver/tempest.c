// SPDX-License-Identifier: GPL-2.0
/*
 * tempest: the Tempest node controller (docs/node-controller.rst) for the
 * programs of a Linux node (docs/linux.rst, "The device from user space").
 *
 * Binds the device tree node "tempest,node-controller" (the board's
 * "tempest,nc-1.7"): 64 KiB of registers and one level interrupt.  The
 * registers are mapped with devm_ioremap() but not requested, so that
 * /init can still write the EXIT register through /dev/mem.
 *
 * /dev/tempest0, mode 0666, one open at a time (a second open while one
 * is open fails with EBUSY):
 *
 * mmap(NULL, len, prot, MAP_SHARED, fd, offset): the offset, in bytes and
 *   page aligned, selects a window, and [offset, offset + len) must lie
 *   inside that one window (else EINVAL; EINVAL too for MAP_PRIVATE):
 *   - 0 .. 64 KiB: the node controller's registers, as Device memory
 *     (pgprot_device, VM_IO | VM_DONTEXPAND | VM_DONTDUMP).
 *   - [RAM_BASE, RAM_BASE + RAM_SIZE), as the node controller's RAM_BASE
 *     and RAM_SIZE registers report them: the memory the node controller
 *     reaches by DMA (its rings), as normal write-back cacheable memory.
 *     The offset is the physical address, so a process that maps it at
 *     that address (MAP_FIXED_NOREPLACE) has VA == PA, as the rings want.
 *     Refused with EPERM when that range overlaps the kernel's System RAM
 *     (the probe says so once): DMA into the kernel's memory must never be
 *     possible from user space.
 *   - [TEMPEST_TAGMEM_BASE, + TAGMEM_SIZE) and the same size at
 *     TEMPEST_TAGMEM_ALIAS: tagged memory, checked and unchecked, normal
 *     cacheable, the offset again the physical address.
 *
 * Interrupts, as UIO does them: the handler disables the interrupt line,
 * counts the event (a 32-bit counter) and wakes the waiters.
 *   read(fd, &u32, 4) blocks until the counter differs from what this
 *     file last read (at open: the counter then), and returns the counter.
 *     EAGAIN with O_NONBLOCK, EINTR (or a restart) on a signal, EINVAL
 *     unless the size is 4.
 *   poll/select/epoll: EPOLLIN | EPOLLRDNORM when read would not block.
 *   write(fd, &u32, 4): 1 enables the line again (after the program has
 *     acknowledged the cause in IRQ_ACK), 0 disables it; anything else,
 *     or a size other than 4, is EINVAL.
 *   close (the last reference: a mapping holds the file open too):
 *     IRQ_ENABLE is set to 0 (a dead process leaves no level interrupt
 *     asserted) and the line is enabled again, so the next process starts
 *     clean (its write of 1 is harmless).
 *
 * No ioctl.
 */

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/interrupt.h>
#include <linux/io.h>
#include <linux/ioport.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/platform_device.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "tempest/tempest-hw.h"

/* One physical window that mmap can select. */
struct tempest_window {
	phys_addr_t base;
	u64 size;
	bool allowed;		/* false: intersects System RAM */
};

struct tempest_dev {
	struct device *dev;
	struct miscdevice misc;
	int id;
	void __iomem *regs;
	phys_addr_t regs_phys;
	resource_size_t regs_size;
	struct tempest_window ram, tag, alias;
	int irq;
	atomic_t opened;
	spinlock_t lock;	/* irq_off and the line's enable depth */
	bool irq_off;		/* disabled by the handler or write 0 */
	atomic_t events;
	wait_queue_head_t wait;
};

/* Per open file: the counter value this file read last. */
struct tempest_file {
	struct tempest_dev *td;
	u32 seen;
};

static DEFINE_IDA(tempest_ida);

static u64 tempest_reg64(struct tempest_dev *td, unsigned int lo)
{
	return readl(td->regs + lo) | (u64)readl(td->regs + lo + 4) << 32;
}

/*
 * A memory window, checked once against the kernel's RAM: user mappings
 * of memory the node controller can write by DMA must never reach it.
 */
static void tempest_window_init(struct tempest_dev *td,
				struct tempest_window *w, const char *what,
				phys_addr_t base, u64 size)
{
	w->base = base;
	w->size = size;
	w->allowed = false;
	if (!size)
		return;
	if (region_intersects(base, size, IORESOURCE_SYSTEM_RAM,
			      IORES_DESC_NONE) != REGION_DISJOINT) {
		dev_info(td->dev, "%s [%pa, +%#llx] overlaps System RAM: mmap of it is refused\n",
			 what, &w->base, size);
		return;
	}
	w->allowed = true;
}

/* Is [start, start + len) inside w? */
static bool tempest_inside(phys_addr_t start, u64 len, phys_addr_t base,
			   u64 size)
{
	return start >= base && start - base <= size &&
	       len <= size - (start - base);
}

static int tempest_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct tempest_file *tf = file->private_data;
	struct tempest_dev *td = tf->td;
	struct tempest_window *mem[] = { &td->ram, &td->tag, &td->alias };
	u64 len = vma->vm_end - vma->vm_start;
	phys_addr_t start;
	unsigned int i;

	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (vma->vm_pgoff > (PHYS_ADDR_MAX >> PAGE_SHIFT))
		return -EINVAL;
	start = (phys_addr_t)vma->vm_pgoff << PAGE_SHIFT;

	if (tempest_inside(start, len, 0, td->regs_size)) {
		vma->vm_flags |= VM_IO | VM_DONTEXPAND | VM_DONTDUMP;
		vma->vm_page_prot = pgprot_device(vma->vm_page_prot);
		return io_remap_pfn_range(vma, vma->vm_start,
					  (td->regs_phys + start) >> PAGE_SHIFT,
					  len, vma->vm_page_prot);
	}
	for (i = 0; i < ARRAY_SIZE(mem); i++) {
		if (!mem[i]->size ||
		    !tempest_inside(start, len, mem[i]->base, mem[i]->size))
			continue;
		if (!mem[i]->allowed)
			return -EPERM;
		/* Normal cacheable memory: vm_page_prot as MAP_SHARED has it */
		vma->vm_flags |= VM_DONTEXPAND | VM_DONTDUMP;
		return remap_pfn_range(vma, vma->vm_start, vma->vm_pgoff, len,
				       vma->vm_page_prot);
	}
	return -EINVAL;
}

static irqreturn_t tempest_irq(int irq, void *arg)
{
	struct tempest_dev *td = arg;

	spin_lock(&td->lock);
	if (!td->irq_off) {
		disable_irq_nosync(irq);
		td->irq_off = true;
	}
	spin_unlock(&td->lock);
	atomic_inc(&td->events);
	wake_up_interruptible(&td->wait);
	return IRQ_HANDLED;
}

/* Enable (on) or disable the line, keeping enable and disable balanced. */
static void tempest_irq_control(struct tempest_dev *td, bool on)
{
	unsigned long flags;

	spin_lock_irqsave(&td->lock, flags);
	if (on && td->irq_off) {
		td->irq_off = false;
		enable_irq(td->irq);
	} else if (!on && !td->irq_off) {
		td->irq_off = true;
		disable_irq_nosync(td->irq);
	}
	spin_unlock_irqrestore(&td->lock, flags);
}

static ssize_t tempest_read(struct file *file, char __user *buf,
			    size_t count, loff_t *ppos)
{
	struct tempest_file *tf = file->private_data;
	struct tempest_dev *td = tf->td;
	u32 now;
	int ret;

	if (count != sizeof(u32))
		return -EINVAL;
	if ((u32)atomic_read(&td->events) == tf->seen) {
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(td->wait,
				(u32)atomic_read(&td->events) != tf->seen);
		if (ret)
			return ret;
	}
	now = atomic_read(&td->events);
	if (copy_to_user(buf, &now, sizeof(now)))
		return -EFAULT;
	tf->seen = now;
	return sizeof(now);
}

static ssize_t tempest_write(struct file *file, const char __user *buf,
			     size_t count, loff_t *ppos)
{
	struct tempest_file *tf = file->private_data;
	u32 v;

	if (count != sizeof(u32))
		return -EINVAL;
	if (copy_from_user(&v, buf, sizeof(v)))
		return -EFAULT;
	if (v > 1)
		return -EINVAL;
	tempest_irq_control(tf->td, v);
	return sizeof(v);
}

static __poll_t tempest_poll(struct file *file, poll_table *wait)
{
	struct tempest_file *tf = file->private_data;
	struct tempest_dev *td = tf->td;

	poll_wait(file, &td->wait, wait);
	if ((u32)atomic_read(&td->events) != tf->seen)
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

static int tempest_open(struct inode *inode, struct file *file)
{
	struct miscdevice *misc = file->private_data;
	struct tempest_dev *td = container_of(misc, struct tempest_dev, misc);
	struct tempest_file *tf;

	if (atomic_cmpxchg(&td->opened, 0, 1))
		return -EBUSY;
	tf = kzalloc(sizeof(*tf), GFP_KERNEL);
	if (!tf) {
		atomic_set(&td->opened, 0);
		return -ENOMEM;
	}
	tf->td = td;
	tf->seen = atomic_read(&td->events);
	file->private_data = tf;
	return stream_open(inode, file);
}

static int tempest_release(struct inode *inode, struct file *file)
{
	struct tempest_file *tf = file->private_data;
	struct tempest_dev *td = tf->td;

	/* No level interrupt left asserted, the line enabled: a clean start */
	writel(0, td->regs + TEMPEST_NC_IRQ_ENABLE);
	tempest_irq_control(td, true);
	kfree(tf);
	atomic_set(&td->opened, 0);
	return 0;
}

static const struct file_operations tempest_fops = {
	.owner = THIS_MODULE,
	.open = tempest_open,
	.release = tempest_release,
	.read = tempest_read,
	.write = tempest_write,
	.poll = tempest_poll,
	.mmap = tempest_mmap,
	.llseek = no_llseek,
};

static int tempest_probe(struct platform_device *pdev)
{
	struct device *dev = &pdev->dev;
	struct tempest_dev *td;
	struct resource *res;
	u32 magic;
	int ret;

	td = devm_kzalloc(dev, sizeof(*td), GFP_KERNEL);
	if (!td)
		return -ENOMEM;
	td->dev = dev;
	spin_lock_init(&td->lock);
	init_waitqueue_head(&td->wait);

	res = platform_get_resource(pdev, IORESOURCE_MEM, 0);
	if (!res)
		return -ENODEV;
	td->regs_phys = res->start;
	td->regs_size = min_t(resource_size_t, resource_size(res),
			      TEMPEST_NC_SIZE);
	if (!PAGE_ALIGNED(td->regs_phys) || !PAGE_ALIGNED(td->regs_size))
		return dev_err_probe(dev, -EINVAL,
				     "registers not page aligned\n");
	/* Not requested: /init writes EXIT through /dev/mem */
	td->regs = devm_ioremap(dev, td->regs_phys, td->regs_size);
	if (!td->regs)
		return -ENOMEM;
	magic = readl(td->regs + TEMPEST_NC_MAGIC);
	if (magic != TEMPEST_NC_MAGIC_VALUE)
		return dev_err_probe(dev, -ENODEV,
				     "no node controller (magic %#x)\n", magic);
	writel(0, td->regs + TEMPEST_NC_IRQ_ENABLE);

	tempest_window_init(td, &td->ram, "RAM",
			    tempest_reg64(td, TEMPEST_NC_RAM_BASE_LO),
			    tempest_reg64(td, TEMPEST_NC_RAM_SIZE_LO));
	tempest_window_init(td, &td->tag, "tagged memory", TEMPEST_TAGMEM_BASE,
			    tempest_reg64(td, TEMPEST_NC_TAGMEM_SIZE_LO));
	tempest_window_init(td, &td->alias, "tagged memory alias",
			    TEMPEST_TAGMEM_ALIAS, td->tag.size);

	td->irq = platform_get_irq(pdev, 0);
	if (td->irq < 0)
		return td->irq;
	ret = devm_request_irq(dev, td->irq, tempest_irq, 0, "tempest", td);
	if (ret)
		return dev_err_probe(dev, ret, "cannot have IRQ %d\n", td->irq);

	td->id = ida_alloc(&tempest_ida, GFP_KERNEL);
	if (td->id < 0)
		return td->id;
	td->misc.minor = MISC_DYNAMIC_MINOR;
	td->misc.name = devm_kasprintf(dev, GFP_KERNEL, "tempest%d", td->id);
	td->misc.fops = &tempest_fops;
	td->misc.parent = dev;
	td->misc.mode = 0666;
	if (!td->misc.name) {
		ret = -ENOMEM;
		goto err_ida;
	}
	ret = misc_register(&td->misc);
	if (ret)
		goto err_ida;
	platform_set_drvdata(pdev, td);
	dev_info(dev, "node %u of %u: /dev/%s, RAM [%pa, +%#llx], tagged memory %#llx bytes\n",
		 readl(td->regs + TEMPEST_NC_NODE_ID),
		 readl(td->regs + TEMPEST_NC_NUM_NODES), td->misc.name,
		 &td->ram.base, td->ram.size, td->tag.size);
	return 0;

err_ida:
	ida_free(&tempest_ida, td->id);
	return ret;
}

static int tempest_remove(struct platform_device *pdev)
{
	struct tempest_dev *td = platform_get_drvdata(pdev);

	misc_deregister(&td->misc);
	writel(0, td->regs + TEMPEST_NC_IRQ_ENABLE);
	ida_free(&tempest_ida, td->id);
	return 0;
}

static const struct of_device_id tempest_of_match[] = {
	{ .compatible = "tempest,node-controller" },
	{ }
};
MODULE_DEVICE_TABLE(of, tempest_of_match);

static struct platform_driver tempest_driver = {
	.probe = tempest_probe,
	.remove = tempest_remove,
	.driver = {
		.name = "tempest",
		.of_match_table = tempest_of_match,
		/* No unbinding under an open file */
		.suppress_bind_attrs = true,
	},
};
module_platform_driver(tempest_driver);

MODULE_DESCRIPTION("Tempest node controller for user space");
MODULE_LICENSE("GPL");
