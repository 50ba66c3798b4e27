/* stubs: the gate's entry points in machine code (x86-64, System V): one per driver function,
 * exported under the names of names.h or handed out by address, all running one trampoline that
 * calls the driver's function between wrap.c's two halves; and dlsym, which hands a driver name's
 * lookup to lookup.c and every other one to libc's dlsym by a jump, so that libc sees the app's
 * return address and RTLD_NEXT means what it meant for the app. */

#include "fns.h"

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
	JMP32 cn_fn_tramp
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
	JMP32 cn_fn_tramp
	.set cn_idx, cn_idx + 1
	.endm

	.set cn_idx, 0
	.p2align 4
	.globl cn_fn_stubs
	.hidden cn_fn_stubs
cn_fn_stubs:
#define CN_FN(name, words) ENTRY name;
#include "names.h"
#undef CN_FN
	.rept CN_FNS_SPARE
	SPARE
	.endr

/* The frame, below %rbp (struct cn_frame, wrap.c): the argument registers at 0-47, %rax at 48,
 * the index at 56, %xmm0-7 at 64-191, the answer's %rax and %rdx at 192, %xmm0-1 at 208-239,
 * the caller's return address at 240. */
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

	.p2align 4
	.type cn_fn_tramp, @function
	.hidden cn_fn_tramp
cn_fn_tramp:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	sub $FRAME, %rsp
	mov %rdi, 0(%rsp)
	mov %rsi, 8(%rsp)
	mov %rdx, 16(%rsp)
	mov %rcx, 24(%rsp)
	mov %r8, 32(%rsp)
	mov %r9, 40(%rsp)
	mov %rax, 48(%rsp)
	mov %r11, 56(%rsp)
	mov 8(%rbp), %rax
	mov %rax, CALLER(%rsp)
#ifdef CN_SAVE_VECTORS /* a sanitizer's runtime, called from the fast half, may use them */
	SAVE_XMM
#endif
	mov %r11d, %edi
	mov %rsp, %rsi
	call cn_fn_enter
	test %rax, %rax
	jnz 1f
#ifndef CN_SAVE_VECTORS
	SAVE_XMM
#endif
	mov 56(%rsp), %edi
	mov %rsp, %rsi
	call cn_fn_enter_slow
#ifndef CN_SAVE_VECTORS
	RESTORE_XMM
#endif
1:
#ifdef CN_SAVE_VECTORS
	RESTORE_XMM
#endif
	mov %rax, %r11
	/* The stack arguments: %rdx words (even, so the stack stays 16-byte aligned). */
	lea (,%rdx,8), %rcx
	sub %rcx, %rsp
	xor %ecx, %ecx
2:	cmp %rdx, %rcx
	jae 3f
	mov 16(%rbp,%rcx,8), %rax
	mov %rax, (%rsp,%rcx,8)
	inc %rcx
	jmp 2b
3:	mov -FRAME+0(%rbp), %rdi
	mov -FRAME+8(%rbp), %rsi
	mov -FRAME+16(%rbp), %rdx
	mov -FRAME+24(%rbp), %rcx
	mov -FRAME+32(%rbp), %r8
	mov -FRAME+40(%rbp), %r9
	mov -FRAME+48(%rbp), %rax
	call *%r11
	lea -FRAME(%rbp), %rsp
	mov %rax, RET(%rsp)
	mov %rdx, RET+8(%rsp)
	movdqa %xmm0, XRET(%rsp)
	movdqa %xmm1, XRET+16(%rsp)
	mov 56(%rsp), %edi
	mov %rsp, %rsi
	call cn_fn_leave
	test %eax, %eax
	jz 4f
	mov 56(%rsp), %edi
	mov %rsp, %rsi
	call cn_fn_leave_slow
4:	movdqa XRET(%rsp), %xmm0
	movdqa XRET+16(%rsp), %xmm1
	mov RET(%rsp), %rax
	mov RET+8(%rsp), %rdx
	leave
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size cn_fn_tramp, . - cn_fn_tramp

/* dlsym(handle, name): cn_dlsym_route answers a driver name itself, and says 1 for any other,
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
	call cn_dlsym_route
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rsi
	.cfi_adjust_cfa_offset -8
	pop %rdi
	.cfi_adjust_cfa_offset -8
	cmp $1, %rax
	jne 1f
	jmp *cn_real_dlsym(%rip)
1:	ret
	.cfi_endproc
	.size dlsym, . - dlsym

#else
#error "the gate's entry points are written for x86-64 only"
#endif

	.section .note.GNU-stack, "", @progbits
