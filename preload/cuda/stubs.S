/* stubs: the gate's entry points in machine code, one per driver function, and the preload's dlsym
 * (docs/FILES.md). */

#include "cuda/fns.h"
#include "cuda/gate.h"

#if defined(__x86_64__)

	.text

/* A jump of fixed size (e9 rel32): the entry points must not shrink or grow. */
	.macro JMP32 to
	.byte 0xe9
	.long \to - . - 4
	.endm

/* Each entry point: 16 bytes (endbr64, the table index into %r11, a jump), in table order. */
	.macro ENTRY name
	.p2align 4
	.globl \name
	.type \name, @function
\name:
	endbr64
	movl $cn_idx, %r11d
	JMP32 cn_stubs_tramp
	.size \name, . - \name
	.if . - \name > CN_STUB_SIZE
	.error "an entry point outgrew CN_STUB_SIZE"
	.endif
	.set cn_idx, cn_idx + 1
	.endm

	.macro SPARE
	.p2align 4
	endbr64
	movl $cn_idx, %r11d
	JMP32 cn_stubs_tramp
	.set cn_idx, cn_idx + 1
	.endm

	.set cn_idx, 0
	.p2align 4
	.globl cn_stubs
	.hidden cn_stubs
cn_stubs:
#define CN_FN(name, words) ENTRY name;
#include "cuda/names.h"
#undef CN_FN
	.rept CN_FNS_SPARE
	SPARE
	.endr

/* The frame, below %rbp (struct cn_frame, wrap.c): the argument registers at 0-47, %rax at 48,
 * the index at 56, %xmm0-7 at 64-191, the answer's %rax and %rdx at 192, %xmm0-1 at 208-239,
 * the caller's return address at 240. The argument registers and vectors are saved only on the
 * way to a slow half in C. */
#define FRAME 256
#define XMM 64
#define RET 192
#define XRET 208
#define CALLER 240

	.macro SAVE_XMM
	movdqa %xmm0, XMM+0(%rsp)
	movdqa %xmm1, XMM+16(%rsp)
	movdqa %xmm2, XMM+32(%rsp)
	movdqa %xmm3, XMM+48(%rsp)
	movdqa %xmm4, XMM+64(%rsp)
	movdqa %xmm5, XMM+80(%rsp)
	movdqa %xmm6, XMM+96(%rsp)
	movdqa %xmm7, XMM+112(%rsp)
	.endm

	.macro RESTORE_XMM
	movdqa XMM+0(%rsp), %xmm0
	movdqa XMM+16(%rsp), %xmm1
	movdqa XMM+32(%rsp), %xmm2
	movdqa XMM+48(%rsp), %xmm3
	movdqa XMM+64(%rsp), %xmm4
	movdqa XMM+80(%rsp), %xmm5
	movdqa XMM+96(%rsp), %xmm6
	movdqa XMM+112(%rsp), %xmm7
	.endm

/* The call of an entry point, %r11 its index. The fast path uses %rax (saved), %r10 and %r11
 * only, and leaves the argument registers alone: it takes the function from the table, the
 * thread's depth from its TLS (gate.h: FRESH and up, no record yet or cudanap's own: slow), and
 * for the outermost call marks the thread inside and looks at the gate's word. */
	.p2align 4
	.type cn_stubs_tramp, @function
	.hidden cn_stubs_tramp
cn_stubs_tramp:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $FRAME, %rsp
	mov %rax, 48(%rsp)
	mov %r11, 56(%rsp)
#ifdef CN_GATE_SLOW_ONLY /* ThreadSanitizer sees none of this: its build takes the slow path */
	jmp .Lslow_in
#endif
	shl $CN_FN_SHIFT, %r11
	lea cn_fns(%rip), %rax
	add %rax, %r11			/* the table's entry */
	cmpb $0, CN_FN_SLOW(%r11)
	jne .Lslow_in
	cmpq $0, CN_FN_REAL(%r11)
	je .Lslow_in
	mov cn_gate_tl@gottpoff(%rip), %r10	/* the thread's state, %fs-relative */
	mov %fs:CN_TL_DEPTH(%r10), %eax
	cmp $CN_TL_FRESH, %eax
	jae .Lslow_in
	inc %eax
	mov %eax, %fs:CN_TL_DEPTH(%r10)
	cmp $1, %eax
	jne .Lcall			/* nested in one of ours */
	mov 8(%rbp), %rax
	sub cn_lookup_drv_lo(%rip), %rax
	cmp cn_lookup_drv_len(%rip), %rax
	jb .Lcall			/* libcuda's own call */
	incl %fs:CN_TL_CALLS(%r10)
	movzbl CN_FN_WORK(%r11), %eax
	add %eax, %fs:CN_TL_WORK(%r10)	/* the calls that work the GPU, for the naps */
	mov 56(%rsp), %eax
	inc %eax
	cmpb $0, cn_gate_fence(%rip)
	jne .Lfence
	mov %eax, %fs:CN_TL_IN(%r10)	/* inside; the agent's membarrier orders it */
.Llook:
	cmpl $0, cn_gate_word(%rip)
	jne .Lclosed
.Lcall:
	movzbl CN_FN_WORDS(%r11), %r10d
	mov CN_FN_REAL(%r11), %r11
	shl $3, %r10
/* Here %r10 holds the bytes of stack arguments, %r11 the driver's function. */
.Lcopy:
	sub %r10, %rsp
	test %r10, %r10
	jz 2f
1:	sub $8, %r10
	mov 16(%rbp,%r10), %rax
	mov %rax, (%rsp,%r10)
	jnz 1b
2:	mov -FRAME+48(%rbp), %rax
	call *%r11
	lea -FRAME(%rbp), %rsp
	mov cn_gate_tl@gottpoff(%rip), %r10
	mov %fs:CN_TL_DEPTH(%r10), %ecx
	cmp $CN_TL_FRESH, %ecx
	jae .Lslow_out
	dec %ecx
	mov %ecx, %fs:CN_TL_DEPTH(%r10)
	jnz 3f
	movl $0, %fs:CN_TL_IN(%r10)	/* outside */
3:	mov 56(%rsp), %rcx
	shl $CN_FN_SHIFT, %rcx
	lea cn_fns(%rip), %rsi
	cmpb $0, CN_FN_AFTER(%rsi,%rcx)
	jne .Lafter
	leave
	.cfi_remember_state
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_restore_state

.Lfence:				/* no membarrier: the mark is a full barrier itself */
	xchg %eax, %fs:CN_TL_IN(%r10)
	jmp .Llook

.Lclosed:				/* undone, and done again by the slow half, which waits */
	decl %fs:CN_TL_DEPTH(%r10)
.Lslow_in:
	mov %rdi, 0(%rsp)
	mov %rsi, 8(%rsp)
	mov %rdx, 16(%rsp)
	mov %rcx, 24(%rsp)
	mov %r8, 32(%rsp)
	mov %r9, 40(%rsp)
	mov 8(%rbp), %rax
	mov %rax, CALLER(%rsp)
	SAVE_XMM
	mov 56(%rsp), %edi
	mov %rsp, %rsi
	call cn_wrap_enter_slow
	mov %rax, %r11
	lea (,%rdx,8), %r10
	RESTORE_XMM
	mov 0(%rsp), %rdi
	mov 8(%rsp), %rsi
	mov 16(%rsp), %rdx
	mov 24(%rsp), %rcx
	mov 32(%rsp), %r8
	mov 40(%rsp), %r9
	jmp .Lcopy

/* After the call, in C: the registers of the answer kept. The argument registers are gone by
 * now; the kinds that look at them find them in the frame, saved on the way in. */
.Lslow_out:
	lea cn_wrap_leave_slow(%rip), %r11
	jmp 4f
.Lafter:
	lea cn_wrap_after(%rip), %r11
4:	mov %rax, RET(%rsp)
	mov %rdx, RET+8(%rsp)
	movdqa %xmm0, XRET(%rsp)
	movdqa %xmm1, XRET+16(%rsp)
	mov 56(%rsp), %edi
	mov %rsp, %rsi
	call *%r11
	movdqa XRET(%rsp), %xmm0
	movdqa XRET+16(%rsp), %xmm1
	mov RET(%rsp), %rax
	mov RET+8(%rsp), %rdx
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size cn_stubs_tramp, . - cn_stubs_tramp

/* dlsym(handle, name): cn_lookup_dlsym_route answers a driver name itself, and says 1 for any other,
 * which goes on to libc's dlsym by a jump with the app's own return address on the stack. */
	.p2align 4
	.globl dlsym
	.type dlsym, @function
dlsym:
	.cfi_startproc
	endbr64
	push %rdi
	.cfi_adjust_cfa_offset 8
	push %rsi
	.cfi_adjust_cfa_offset 8
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	call cn_lookup_dlsym_route
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	cmp $1, %rax
	jne 1f
	jmp *cn_lookup_real_dlsym(%rip)
1:	ret
	.cfi_endproc
	.size dlsym, . - dlsym

#else
#error "the gate's entry points are written for x86-64 only"
#endif

	.section .note.GNU-stack, "", @progbits
