; Hand-written sample for tests/unit/test-ir.c, shaped like llvm-dis output
; of a work-group function PoCL leaves in parallel.bc.  Expected counts are
; in vecfma.ll.expected.json; docs/ir-analysis.md explains each field.
source_filename = "parallel_bc"
target triple = "x86_64-pc-linux-gnu"

%struct.unknown = type { i32, float }

declare <16 x float> @llvm.fmuladd.v16f32(<16 x float>, <16 x float>, <16 x float>)
declare float @llvm.fma.f32(float, float, float)
declare <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr>, i32, <8 x i1>, <8 x float>)
declare void @_Z7barrierj(i32)
declare float @helper(float)

; Function Attrs: nounwind
define void @_pocl_kernel_saxpy(ptr %a, ptr %b, i64 %n) {
entry:
  %priv = alloca [64 x float], align 16
  %p = getelementptr inbounds float, ptr %a, i64 %n
  %v = load <16 x float>, ptr %p, align 4
  %w = load float, ptr %b, align 4
  %r = call <16 x float> @llvm.fmuladd.v16f32(<16 x float> %v, <16 x float> %v, <16 x float> %v)
  store <16 x float> %r, ptr %p, align 4
  %s = tail call float @llvm.fma.f32(float %w, float %w, float 1.000000e+00)
  %m = fmul float %s, %w
  %d = fsub float %m, %w
  %h = call float @helper(float %d)
  store float %h, ptr %priv, align 16
  call void @_Z7barrierj(i32 1)
  %c = icmp eq i64 %n, 0
  br i1 %c, label %exit, label %more

more:                                             ; preds = %entry
  %old = atomicrmw add ptr %b, i32 1 seq_cst, align 4
  %ptrs = insertelement <8 x ptr> undef, ptr %a, i32 0
  %g = call <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr> %ptrs, i32 4, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, <8 x float> undef)
  switch i64 %n, label %exit [
    i64 1, label %exit
    i64 2, label %exit
  ]

exit:                                             ; preds = %more, %more, %more, %entry
  ret void
}

define internal float @"quoted name"(float %x) {
  %y = fadd fast float %x, %x
  %u = alloca %struct.unknown, align 4
  %t = alloca <3 x float>, align 16
  ret float %y
}
