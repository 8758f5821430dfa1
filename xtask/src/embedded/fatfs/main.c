/*
 * `cargo xtask embedded --fatfs`: ChaN's FatFs f_mkfs on a Cortex-M3, for
 * its footprint. Built twice (see ../fatfs.rs): as is, and with
 * FATFS_BASELINE, where f_mkfs is replaced by a stub that does nothing; the
 * two images differ by f_mkfs and everything it pulls in.
 *
 * The disk (diskio.h) stores nothing: it counts the sectors written and
 * reports SECTORS sectors of 512 bytes. Each f_mkfs must return FR_OK.
 * Output through Arm semihosting (SYS_WRITE0, SYS_EXIT; "Semihosting for
 * AArch32 and AArch64", Arm IHI 0075); the stack is painted below main's
 * stack pointer before the calls and read after them.
 *
 * This file is compiled with -fno-tree-loop-distribute-patterns so that
 * its own loops do not call memset/memcpy: any C library function in the
 * image is there for FatFs.
 */
#include <stdint.h>
#include "ff.h"
#include "diskio.h"

#define SECTORS 131072u /* 64 MiB */
#define PAINT 0xa5a5a5a5u

static BYTE work[FF_MAX_SS]; /* f_mkfs's work buffer, passed explicitly */
static volatile DWORD writes;
static volatile uintptr_t sink;
extern uint32_t _sidata[], _sdata[], _edata[], _sbss[], _ebss[];
extern uint32_t _stack_top[], _stack_bottom[];

DSTATUS disk_status(BYTE pdrv) { (void)pdrv; return 0; }
DSTATUS disk_initialize(BYTE pdrv) { (void)pdrv; return 0; }

DRESULT disk_read(BYTE pdrv, BYTE *buff, DWORD sector, UINT count)
{
	(void)pdrv; (void)buff; (void)sector; (void)count;
	return RES_OK;
}

DRESULT disk_write(BYTE pdrv, const BYTE *buff, DWORD sector, UINT count)
{
	(void)pdrv; (void)buff; (void)sector;
	writes += count;
	return RES_OK;
}

DRESULT disk_ioctl(BYTE pdrv, BYTE cmd, void *buff)
{
	(void)pdrv;
	switch (cmd) {
	case CTRL_SYNC: return RES_OK;
	case GET_SECTOR_COUNT: *(DWORD *)buff = SECTORS; return RES_OK;
	case GET_BLOCK_SIZE: *(DWORD *)buff = 1; return RES_OK;
	default: return RES_PARERR;
	}
}

#ifdef FATFS_BASELINE
/* The same call, to nothing (noipa: the caller cannot see through it). */
__attribute__((noipa)) FRESULT mkfs_stub(const TCHAR *path, BYTE opt, DWORD au, void *buf, UINT len)
{
	(void)path; (void)opt; (void)au; (void)buf; (void)len;
	return FR_OK;
}
#define f_mkfs mkfs_stub
#endif

static int semihost(int op, const void *arg)
{
	register int r0 __asm__("r0") = op;
	register const void *r1 __asm__("r1") = arg;
	__asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
	return r0;
}

static void put(const char *s) { semihost(0x04, s); }

static void put_u32(uint32_t v)
{
	char b[11], *p = b + 10;
	*p = 0;
	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(p);
}

static uint32_t *sp_now(void)
{
	uint32_t *sp;
	__asm__ volatile("mov %0, sp" : "=r"(sp));
	return sp;
}

static const struct {
	const char *name;
	BYTE opt;
} jobs[] = { { "exfat", FM_EXFAT }, { "fat32", FM_FAT32 } };

int main(void)
{
	FRESULT res[2];
	uint32_t written[2];
	uint32_t *top = sp_now(), *p;
	int failed = 0;

	/* The disk functions stay in both images: they are not FatFs's. */
	sink = (uintptr_t)disk_status ^ (uintptr_t)disk_initialize ^ (uintptr_t)disk_read
		^ (uintptr_t)disk_write ^ (uintptr_t)disk_ioctl ^ (uintptr_t)work;
	for (p = _stack_bottom; p < top; p++)
		*p = PAINT;
	for (unsigned i = 0; i < 2; i++) {
		writes = 0;
		res[i] = f_mkfs("", jobs[i].opt, 0, work, sizeof work);
		written[i] = writes;
	}
	for (p = _stack_bottom; p < top && *p == PAINT; p++) {}
	for (unsigned i = 0; i < 2; i++) {
		put("fatfs: f_mkfs ");
		put(jobs[i].name);
		put(" result=");
		put_u32(res[i]);
		put(" sectors_written=");
		put_u32(written[i]);
		put("\n");
		failed |= res[i] != FR_OK;
	}
	put("fatfs: stack_peak_bytes=");
	put_u32((uint32_t)(top - p) * 4);
	put("\n");
	return failed;
}

__attribute__((noreturn)) static void finish(int failed)
{
	/* ADP_Stopped_ApplicationExit (QEMU exits 0) or RunTimeErrorUnknown. */
	semihost(0x18, (const void *)(uintptr_t)(failed ? 0x20023 : 0x20026));
	for (;;) {}
}

static void fault(void)
{
	put("fatfs: fault\n");
	finish(1);
}

__attribute__((noreturn)) void Reset(void)
{
	uint32_t *s = _sidata, *d;
	for (d = _sdata; d < _edata;)
		*d++ = *s++;
	for (d = _sbss; d < _ebss;)
		*d++ = 0;
	finish(main());
}

/* Initial stack pointer, reset, NMI, HardFault (ARMv7-M ARM, B1.5.3). */
__attribute__((section(".vectors"), used)) static void (*const vectors[])(void) = {
	(void (*)(void))_stack_top, Reset, fault, fault,
};
