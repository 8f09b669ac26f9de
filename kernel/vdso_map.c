// The vDSO (see vdso/vdso.h): the kernel keeps one physical copy of the image and
// maps the same pages read+exec at USER_VDSO in every process, the way Linux
// shares its vDSO. Each process also gets its own executor page at
// USER_EXEC_PAGE, where the user runtime keeps its struct executor (kernel/prio.c
// reads the ready bitmap from there).
#include "vdso_map.h"
#include "abi.h"
#include "klib.h"
#include "palloc.h"
#include "printf.h"
#include "vdso.h"

extern const char _vdso_start[], _vdso_end[];

static char *image;        // page-aligned copy
static uint64_t npages;

int vdso_init(void) {
  size_t size = (size_t)(_vdso_end - _vdso_start);
  const struct vdso_table *t = (const struct vdso_table *)_vdso_start;
  if (size < sizeof *t || t->magic != VDSO_MAGIC || t->version != VDSO_VERSION) {
    kprintf("coral: the vDSO image is missing or has a bad header\n");
    return -1;
  }
  npages = ALIGN_UP(size, PAGE_SIZE) / PAGE_SIZE;
  image = palloc_zero(npages);
  if (!image)
    return -1;
  memcpy(image, _vdso_start, size);
  return 0;
}

int vdso_map(pte_t *pt) {
  if (!image)
    return -ENOEXEC;
  for (uint64_t i = 0; i < npages; i++)
    if (uvm_map_shared(pt, USER_VDSO + i * PAGE_SIZE, (uint64_t)image + i * PAGE_SIZE,
                       PTE_R | PTE_X) < 0)
      return -ENOMEM;
  return uvm_alloc(pt, USER_EXEC_PAGE, USER_EXEC_PAGE + PAGE_SIZE, PTE_R | PTE_W);
}
