; ModuleID = '/tmp/evalpod-apNFgS/w/p-r03-v001/pocl/HP/GAIPAGGGIMNGACHKLDFLFPELMFKHCBCJGACKD/pack_b/64-16-1-goffs0-smallgrid/parallel.bc'
source_filename = "parallel_bc"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

; Function Attrs: argmemonly nocallback nofree nosync nounwind willreturn
declare void @llvm.lifetime.start.p0(i64 immarg, ptr nocapture) #0

; Function Attrs: argmemonly nocallback nofree nosync nounwind willreturn
declare void @llvm.lifetime.end.p0(i64 immarg, ptr nocapture) #0

; Function Attrs: argmemonly nocallback nofree nosync nounwind readonly willreturn
declare <8 x float> @llvm.masked.load.v8f32.p0(ptr, i32 immarg, <8 x i1>, <8 x float>) #1

; Function Attrs: alwaysinline nofree norecurse nosync nounwind
define void @_pocl_kernel_pack_b(ptr noalias nocapture noundef readonly align 4 %0, ptr noalias nocapture noundef writeonly align 4 %1, i32 noundef %2, i32 noundef %3, ptr nocapture readnone %4, i64 %5, i64 %6, i64 %7) local_unnamed_addr #2 !kernel_arg_addr_space !28 !kernel_arg_access_qual !29 !kernel_arg_type !30 !kernel_arg_base_type !30 !kernel_arg_type_qual !31 !kernel_arg_name !32 !pocl_generated !33 {
  %.t.i.pocl_context.i = alloca [1 x [16 x [64 x [16 x float]]]], align 64
  tail call void @llvm.experimental.noalias.scope.decl(metadata !34)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !37)
  call void @llvm.lifetime.start.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i)
  %9 = shl i64 %5, 6
  %10 = shl i64 %6, 4
  %conv4.i = sext i32 %2 to i64
  %conv15.i = sext i32 %3 to i64
  br label %pregion_for_entry.pregion_for_init.i

pregion_for_entry.pregion_for_init.i:             ; preds = %pregion_for_end.i, %8
  %_local_id_y.0 = phi i64 [ 0, %8 ], [ %97, %pregion_for_end.i ]
  %11 = add nuw nsw i64 %_local_id_y.0, %10
  %.fr = freeze i64 %11
  %conv2.i = trunc i64 %.fr to i32
  %sext.i = shl i64 %.fr, 32
  %conv3.i = ashr exact i64 %sext.i, 32
  %mul5.i = mul nsw i64 %conv3.i, %conv4.i
  %add.ptr.i = getelementptr inbounds float, ptr %0, i64 %mul5.i
  %cmp.i = icmp slt i32 %conv2.i, %3
  br i1 %cmp.i, label %pregion_for_entry.entry.i.preheader, label %pregion_for_end.i

pregion_for_entry.entry.i.preheader:              ; preds = %pregion_for_entry.pregion_for_init.i
  br label %pregion_for_entry.entry.i

pregion_for_entry.entry.i:                        ; preds = %if.end.r_exit.i, %pregion_for_entry.entry.i.preheader
  %_local_id_x.0 = phi i64 [ %96, %if.end.r_exit.i ], [ 0, %pregion_for_entry.entry.i.preheader ]
  %12 = add nuw nsw i64 %_local_id_x.0, %9
  %call.tr.i = trunc i64 %12 to i32
  %conv.i = shl i32 %call.tr.i, 4
  %idx.ext.i = sext i32 %conv.i to i64
  %add.ptr6.i = getelementptr inbounds float, ptr %add.ptr.i, i64 %idx.ext.i
  %cmp8.i = icmp slt i32 %conv.i, %2
  br i1 %cmp8.i, label %if.then.i, label %if.end.r_exit.i

if.then.i:                                        ; preds = %pregion_for_entry.entry.i
  %add.i = add nsw i32 %conv.i, 16
  %cmp10.not.i = icmp sgt i32 %add.i, %2
  br i1 %cmp10.not.i, label %cond.false.i, label %cond.true.i

cond.true.i:                                      ; preds = %if.then.i
  %13 = load <2 x float>, ptr %add.ptr6.i, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %14 = getelementptr inbounds float, ptr %add.ptr6.i, i64 2
  %15 = load <2 x float>, ptr %14, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %16 = shufflevector <2 x float> %13, <2 x float> %15, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %17 = getelementptr inbounds float, ptr %add.ptr6.i, i64 4
  %18 = load <2 x float>, ptr %17, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %19 = getelementptr inbounds float, ptr %17, i64 2
  %20 = load <2 x float>, ptr %19, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %21 = shufflevector <2 x float> %18, <2 x float> %20, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %22 = shufflevector <4 x float> %16, <4 x float> %21, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %23 = getelementptr inbounds float, ptr %add.ptr6.i, i64 8
  %24 = load <2 x float>, ptr %23, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %25 = getelementptr inbounds float, ptr %23, i64 2
  %26 = load <2 x float>, ptr %25, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %27 = shufflevector <2 x float> %24, <2 x float> %26, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %28 = getelementptr inbounds float, ptr %23, i64 4
  %29 = load <2 x float>, ptr %28, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %30 = getelementptr inbounds float, ptr %28, i64 2
  %31 = load <2 x float>, ptr %30, align 4, !tbaa !39, !alias.scope !34, !noalias !37, !llvm.access.group !43
  %32 = shufflevector <2 x float> %29, <2 x float> %31, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %33 = shufflevector <4 x float> %27, <4 x float> %32, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %34 = shufflevector <8 x float> %22, <8 x float> %33, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i

cond.false.i:                                     ; preds = %if.then.i
  %sub.i = sub nsw i32 %2, %conv.i
  %35 = sext i32 %sub.i to i64
  %broadcast.splatinsert.i = insertelement <8 x i64> poison, i64 %35, i64 0
  %broadcast.splat.i = shufflevector <8 x i64> %broadcast.splatinsert.i, <8 x i64> poison, <8 x i32> zeroinitializer
  br label %vector.body.i

vector.body.i:                                    ; preds = %vector.body.i, %cond.false.i
  %vec.ind.next.i4 = phi <8 x i64> [ %vec.ind.next.i, %vector.body.i ], [ <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %cond.false.i ]
  %index.next.i2 = phi i64 [ %index.next.i, %vector.body.i ], [ 0, %cond.false.i ]
  %36 = icmp slt <8 x i64> %vec.ind.next.i4, %broadcast.splat.i
  %37 = getelementptr float, ptr %add.ptr6.i, i64 %index.next.i2
  %wide.masked.load.i = tail call <8 x float> @llvm.masked.load.v8f32.p0(ptr %37, i32 4, <8 x i1> %36, <8 x float> zeroinitializer), !tbaa !39, !noalias !37, !llvm.access.group !43
  %38 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 %index.next.i2
  store <8 x float> %wide.masked.load.i, ptr %38, align 32, !tbaa !39, !noalias !46, !llvm.access.group !43
  %index.next.i = add nuw nsw i64 %index.next.i2, 8
  %vec.ind.next.i = add <8 x i64> %vec.ind.next.i4, <i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8>
  %39 = icmp eq i64 %index.next.i, 16
  br i1 %39, label %load_part.exit.i, label %vector.body.i, !llvm.loop !47

load_part.exit.i:                                 ; preds = %vector.body.i
  %40 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0
  %41 = load <2 x float>, ptr %40, align 64, !tbaa !39, !noalias !46, !llvm.access.group !43
  %42 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 2
  %43 = load <2 x float>, ptr %42, align 8, !tbaa !39, !noalias !46, !llvm.access.group !43
  %44 = shufflevector <2 x float> %41, <2 x float> %43, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %45 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 4
  %46 = load <2 x float>, ptr %45, align 16, !tbaa !39, !noalias !46, !llvm.access.group !43
  %47 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 6
  %48 = load <2 x float>, ptr %47, align 8, !tbaa !39, !noalias !46, !llvm.access.group !43
  %49 = shufflevector <2 x float> %46, <2 x float> %48, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %50 = shufflevector <4 x float> %44, <4 x float> %49, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %51 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 8
  %52 = load <2 x float>, ptr %51, align 32, !tbaa !39, !noalias !46, !llvm.access.group !43
  %53 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 10
  %54 = load <2 x float>, ptr %53, align 8, !tbaa !39, !noalias !46, !llvm.access.group !43
  %55 = shufflevector <2 x float> %52, <2 x float> %54, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %56 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 12
  %57 = load <2 x float>, ptr %56, align 16, !tbaa !39, !noalias !46, !llvm.access.group !43
  %58 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i, i64 0, i64 0, i64 %_local_id_y.0, i64 %_local_id_x.0, i64 14
  %59 = load <2 x float>, ptr %58, align 8, !tbaa !39, !noalias !46, !llvm.access.group !43
  %60 = shufflevector <2 x float> %57, <2 x float> %59, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %61 = shufflevector <4 x float> %55, <4 x float> %60, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %62 = shufflevector <8 x float> %50, <8 x float> %61, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i

cond.end.i:                                       ; preds = %load_part.exit.i, %cond.true.i
  %63 = phi <16 x float> [ %62, %load_part.exit.i ], [ %34, %cond.true.i ]
  %div.i = sdiv i32 %conv.i, 16
  %conv14.i = sext i32 %div.i to i64
  %mul16.i = mul nsw i64 %conv14.i, %conv15.i
  %add18.i = add nsw i64 %mul16.i, %conv3.i
  %mul19.i = shl i64 %add18.i, 4
  %add.ptr20.i = getelementptr inbounds float, ptr %1, i64 %mul19.i
  %64 = shufflevector <16 x float> %63, <16 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %65 = bitcast <4 x float> %64 to <2 x double>
  %66 = extractelement <2 x double> %65, i64 0
  %67 = bitcast double %66 to <2 x float>
  %68 = extractelement <2 x double> %65, i64 1
  %69 = bitcast double %68 to <2 x float>
  %70 = shufflevector <2 x float> %67, <2 x float> %69, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %70, ptr %add.ptr20.i, align 4, !tbaa !39, !alias.scope !37, !noalias !34, !llvm.access.group !43
  %71 = shufflevector <16 x float> %63, <16 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %72 = getelementptr inbounds float, ptr %add.ptr20.i, i64 4
  %73 = bitcast <4 x float> %71 to <2 x double>
  %74 = extractelement <2 x double> %73, i64 0
  %75 = bitcast double %74 to <2 x float>
  %76 = extractelement <2 x double> %73, i64 1
  %77 = bitcast double %76 to <2 x float>
  %78 = shufflevector <2 x float> %75, <2 x float> %77, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %78, ptr %72, align 4, !tbaa !39, !alias.scope !37, !noalias !34, !llvm.access.group !43
  %79 = shufflevector <16 x float> %63, <16 x float> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %80 = getelementptr inbounds float, ptr %add.ptr20.i, i64 8
  %81 = shufflevector <8 x float> %79, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %82 = bitcast <4 x float> %81 to <2 x double>
  %83 = extractelement <2 x double> %82, i64 0
  %84 = bitcast double %83 to <2 x float>
  %85 = extractelement <2 x double> %82, i64 1
  %86 = bitcast double %85 to <2 x float>
  %87 = shufflevector <2 x float> %84, <2 x float> %86, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %87, ptr %80, align 4, !tbaa !39, !alias.scope !37, !noalias !34, !llvm.access.group !43
  %88 = shufflevector <8 x float> %79, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %89 = getelementptr inbounds float, ptr %80, i64 4
  %90 = bitcast <4 x float> %88 to <2 x double>
  %91 = extractelement <2 x double> %90, i64 0
  %92 = bitcast double %91 to <2 x float>
  %93 = extractelement <2 x double> %90, i64 1
  %94 = bitcast double %93 to <2 x float>
  %95 = shufflevector <2 x float> %92, <2 x float> %94, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %95, ptr %89, align 4, !tbaa !39, !alias.scope !37, !noalias !34, !llvm.access.group !43
  br label %if.end.r_exit.i

if.end.r_exit.i:                                  ; preds = %cond.end.i, %pregion_for_entry.entry.i
  %96 = add nuw nsw i64 %_local_id_x.0, 1
  %exitcond.not = icmp eq i64 %96, 64
  br i1 %exitcond.not, label %pregion_for_end.i.loopexit, label %pregion_for_entry.entry.i, !llvm.loop !50

pregion_for_end.i.loopexit:                       ; preds = %if.end.r_exit.i
  br label %pregion_for_end.i

pregion_for_end.i:                                ; preds = %pregion_for_end.i.loopexit, %pregion_for_entry.pregion_for_init.i
  %97 = add nuw nsw i64 %_local_id_y.0, 1
  %exitcond6.not = icmp eq i64 %97, 16
  br i1 %exitcond6.not, label %pack_b.exit, label %pregion_for_entry.pregion_for_init.i, !llvm.loop !52

pack_b.exit:                                      ; preds = %pregion_for_end.i
  call void @llvm.lifetime.end.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i)
  ret void
}

; Function Attrs: inaccessiblememonly nocallback nofree nosync nounwind willreturn
declare void @llvm.experimental.noalias.scope.decl(metadata) #3

; Function Attrs: nofree nosync nounwind
define void @_pocl_kernel_pack_b_workgroup(ptr nocapture readonly %0, ptr nocapture readnone %1, i64 %2, i64 %3, i64 %4) local_unnamed_addr #4 {
  %.t.i.pocl_context.i.i = alloca [1 x [16 x [64 x [16 x float]]]], align 64
  %6 = load ptr, ptr %0, align 8
  %7 = load ptr, ptr %6, align 8
  %8 = getelementptr ptr, ptr %0, i64 1
  %9 = load ptr, ptr %8, align 8
  %10 = load ptr, ptr %9, align 8
  %11 = getelementptr ptr, ptr %0, i64 2
  %12 = load ptr, ptr %11, align 8
  %13 = load i32, ptr %12, align 4
  %14 = getelementptr ptr, ptr %0, i64 3
  %15 = load ptr, ptr %14, align 8
  %16 = load i32, ptr %15, align 4
  tail call void @llvm.experimental.noalias.scope.decl(metadata !54)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !57)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !59)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !62)
  call void @llvm.lifetime.start.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i.i), !noalias !64
  %17 = shl i64 %2, 6
  %18 = shl i64 %3, 4
  %conv4.i.i = sext i32 %13 to i64
  %conv15.i.i = sext i32 %16 to i64
  br label %pregion_for_entry.pregion_for_init.i.i

pregion_for_entry.pregion_for_init.i.i:           ; preds = %pregion_for_end.i.i, %5
  %_local_id_y.i.0 = phi i64 [ 0, %5 ], [ %105, %pregion_for_end.i.i ]
  %19 = add nuw nsw i64 %_local_id_y.i.0, %18
  %conv2.i.i = trunc i64 %19 to i32
  %sext.i.i = shl i64 %19, 32
  %conv3.i.i = ashr exact i64 %sext.i.i, 32
  %mul5.i.i = mul nsw i64 %conv3.i.i, %conv4.i.i
  %add.ptr.i.i = getelementptr inbounds float, ptr %7, i64 %mul5.i.i
  %cmp.i.i = icmp sgt i32 %16, %conv2.i.i
  %cmp.i.i.fr = freeze i1 %cmp.i.i
  br i1 %cmp.i.i.fr, label %pregion_for_entry.entry.i.i.preheader, label %pregion_for_end.i.i

pregion_for_entry.entry.i.i.preheader:            ; preds = %pregion_for_entry.pregion_for_init.i.i
  br label %pregion_for_entry.entry.i.i

pregion_for_entry.entry.i.i:                      ; preds = %if.end.r_exit.i.i, %pregion_for_entry.entry.i.i.preheader
  %_local_id_x.i.0 = phi i64 [ %104, %if.end.r_exit.i.i ], [ 0, %pregion_for_entry.entry.i.i.preheader ]
  %20 = add nuw nsw i64 %_local_id_x.i.0, %17
  %call.tr.i.i = trunc i64 %20 to i32
  %conv.i.i = shl i32 %call.tr.i.i, 4
  %idx.ext.i.i = sext i32 %conv.i.i to i64
  %add.ptr6.i.i = getelementptr inbounds float, ptr %add.ptr.i.i, i64 %idx.ext.i.i
  %cmp8.i.i = icmp sgt i32 %13, %conv.i.i
  br i1 %cmp8.i.i, label %if.then.i.i, label %if.end.r_exit.i.i

if.then.i.i:                                      ; preds = %pregion_for_entry.entry.i.i
  %add.i.i = add nsw i32 %conv.i.i, 16
  %cmp10.not.i.i = icmp sgt i32 %add.i.i, %13
  br i1 %cmp10.not.i.i, label %cond.false.i.i, label %cond.true.i.i

cond.true.i.i:                                    ; preds = %if.then.i.i
  %21 = load <2 x float>, ptr %add.ptr6.i.i, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %22 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 2
  %23 = load <2 x float>, ptr %22, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %24 = shufflevector <2 x float> %21, <2 x float> %23, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %25 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 4
  %26 = load <2 x float>, ptr %25, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %27 = getelementptr inbounds float, ptr %25, i64 2
  %28 = load <2 x float>, ptr %27, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %29 = shufflevector <2 x float> %26, <2 x float> %28, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %30 = shufflevector <4 x float> %24, <4 x float> %29, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %31 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 8
  %32 = load <2 x float>, ptr %31, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %33 = getelementptr inbounds float, ptr %31, i64 2
  %34 = load <2 x float>, ptr %33, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %35 = shufflevector <2 x float> %32, <2 x float> %34, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %36 = getelementptr inbounds float, ptr %31, i64 4
  %37 = load <2 x float>, ptr %36, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %38 = getelementptr inbounds float, ptr %36, i64 2
  %39 = load <2 x float>, ptr %38, align 4, !tbaa !39, !alias.scope !65, !noalias !66, !llvm.access.group !43
  %40 = shufflevector <2 x float> %37, <2 x float> %39, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %41 = shufflevector <4 x float> %35, <4 x float> %40, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %42 = shufflevector <8 x float> %30, <8 x float> %41, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i.i

cond.false.i.i:                                   ; preds = %if.then.i.i
  %sub.i.i = sub nsw i32 %13, %conv.i.i
  %43 = sext i32 %sub.i.i to i64
  %broadcast.splatinsert.i.i = insertelement <8 x i64> poison, i64 %43, i64 0
  %broadcast.splat.i.i = shufflevector <8 x i64> %broadcast.splatinsert.i.i, <8 x i64> poison, <8 x i32> zeroinitializer
  br label %vector.body.i.i

vector.body.i.i:                                  ; preds = %vector.body.i.i, %cond.false.i.i
  %vec.ind.next.i.i4 = phi <8 x i64> [ %vec.ind.next.i.i, %vector.body.i.i ], [ <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %cond.false.i.i ]
  %index.next.i.i2 = phi i64 [ %index.next.i.i, %vector.body.i.i ], [ 0, %cond.false.i.i ]
  %44 = icmp slt <8 x i64> %vec.ind.next.i.i4, %broadcast.splat.i.i
  %45 = getelementptr float, ptr %add.ptr6.i.i, i64 %index.next.i.i2
  %wide.masked.load.i.i = tail call <8 x float> @llvm.masked.load.v8f32.p0(ptr %45, i32 4, <8 x i1> %44, <8 x float> zeroinitializer), !tbaa !39, !alias.scope !54, !noalias !66, !llvm.access.group !43
  %46 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 %index.next.i.i2
  store <8 x float> %wide.masked.load.i.i, ptr %46, align 32, !tbaa !39, !noalias !67, !llvm.access.group !43
  %index.next.i.i = add nuw nsw i64 %index.next.i.i2, 8
  %vec.ind.next.i.i = add <8 x i64> %vec.ind.next.i.i4, <i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8>
  %47 = icmp eq i64 %index.next.i.i, 16
  br i1 %47, label %load_part.exit.i.i, label %vector.body.i.i, !llvm.loop !47

load_part.exit.i.i:                               ; preds = %vector.body.i.i
  %48 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0
  %49 = load <2 x float>, ptr %48, align 64, !tbaa !39, !noalias !67, !llvm.access.group !43
  %50 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 2
  %51 = load <2 x float>, ptr %50, align 8, !tbaa !39, !noalias !67, !llvm.access.group !43
  %52 = shufflevector <2 x float> %49, <2 x float> %51, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %53 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 4
  %54 = load <2 x float>, ptr %53, align 16, !tbaa !39, !noalias !67, !llvm.access.group !43
  %55 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 6
  %56 = load <2 x float>, ptr %55, align 8, !tbaa !39, !noalias !67, !llvm.access.group !43
  %57 = shufflevector <2 x float> %54, <2 x float> %56, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %58 = shufflevector <4 x float> %52, <4 x float> %57, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %59 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 8
  %60 = load <2 x float>, ptr %59, align 32, !tbaa !39, !noalias !67, !llvm.access.group !43
  %61 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 10
  %62 = load <2 x float>, ptr %61, align 8, !tbaa !39, !noalias !67, !llvm.access.group !43
  %63 = shufflevector <2 x float> %60, <2 x float> %62, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %64 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 12
  %65 = load <2 x float>, ptr %64, align 16, !tbaa !39, !noalias !67, !llvm.access.group !43
  %66 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 14
  %67 = load <2 x float>, ptr %66, align 8, !tbaa !39, !noalias !67, !llvm.access.group !43
  %68 = shufflevector <2 x float> %65, <2 x float> %67, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %69 = shufflevector <4 x float> %63, <4 x float> %68, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %70 = shufflevector <8 x float> %58, <8 x float> %69, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i.i

cond.end.i.i:                                     ; preds = %load_part.exit.i.i, %cond.true.i.i
  %71 = phi <16 x float> [ %70, %load_part.exit.i.i ], [ %42, %cond.true.i.i ]
  %div.i.i = sdiv i32 %conv.i.i, 16
  %conv14.i.i = sext i32 %div.i.i to i64
  %mul16.i.i = mul nsw i64 %conv14.i.i, %conv15.i.i
  %add18.i.i = add nsw i64 %mul16.i.i, %conv3.i.i
  %mul19.i.i = shl i64 %add18.i.i, 4
  %add.ptr20.i.i = getelementptr inbounds float, ptr %10, i64 %mul19.i.i
  %72 = shufflevector <16 x float> %71, <16 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %73 = bitcast <4 x float> %72 to <2 x double>
  %74 = extractelement <2 x double> %73, i64 0
  %75 = bitcast double %74 to <2 x float>
  %76 = extractelement <2 x double> %73, i64 1
  %77 = bitcast double %76 to <2 x float>
  %78 = shufflevector <2 x float> %75, <2 x float> %77, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %78, ptr %add.ptr20.i.i, align 4, !tbaa !39, !alias.scope !66, !noalias !65, !llvm.access.group !43
  %79 = shufflevector <16 x float> %71, <16 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %80 = getelementptr inbounds float, ptr %add.ptr20.i.i, i64 4
  %81 = bitcast <4 x float> %79 to <2 x double>
  %82 = extractelement <2 x double> %81, i64 0
  %83 = bitcast double %82 to <2 x float>
  %84 = extractelement <2 x double> %81, i64 1
  %85 = bitcast double %84 to <2 x float>
  %86 = shufflevector <2 x float> %83, <2 x float> %85, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %86, ptr %80, align 4, !tbaa !39, !alias.scope !66, !noalias !65, !llvm.access.group !43
  %87 = shufflevector <16 x float> %71, <16 x float> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %88 = getelementptr inbounds float, ptr %add.ptr20.i.i, i64 8
  %89 = shufflevector <8 x float> %87, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %90 = bitcast <4 x float> %89 to <2 x double>
  %91 = extractelement <2 x double> %90, i64 0
  %92 = bitcast double %91 to <2 x float>
  %93 = extractelement <2 x double> %90, i64 1
  %94 = bitcast double %93 to <2 x float>
  %95 = shufflevector <2 x float> %92, <2 x float> %94, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %95, ptr %88, align 4, !tbaa !39, !alias.scope !66, !noalias !65, !llvm.access.group !43
  %96 = shufflevector <8 x float> %87, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %97 = getelementptr inbounds float, ptr %88, i64 4
  %98 = bitcast <4 x float> %96 to <2 x double>
  %99 = extractelement <2 x double> %98, i64 0
  %100 = bitcast double %99 to <2 x float>
  %101 = extractelement <2 x double> %98, i64 1
  %102 = bitcast double %101 to <2 x float>
  %103 = shufflevector <2 x float> %100, <2 x float> %102, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %103, ptr %97, align 4, !tbaa !39, !alias.scope !66, !noalias !65, !llvm.access.group !43
  br label %if.end.r_exit.i.i

if.end.r_exit.i.i:                                ; preds = %cond.end.i.i, %pregion_for_entry.entry.i.i
  %104 = add nuw nsw i64 %_local_id_x.i.0, 1
  %exitcond.not = icmp eq i64 %104, 64
  br i1 %exitcond.not, label %pregion_for_end.i.i.loopexit, label %pregion_for_entry.entry.i.i, !llvm.loop !50

pregion_for_end.i.i.loopexit:                     ; preds = %if.end.r_exit.i.i
  br label %pregion_for_end.i.i

pregion_for_end.i.i:                              ; preds = %pregion_for_end.i.i.loopexit, %pregion_for_entry.pregion_for_init.i.i
  %105 = add nuw nsw i64 %_local_id_y.i.0, 1
  %exitcond6.not = icmp eq i64 %105, 16
  br i1 %exitcond6.not, label %_pocl_kernel_pack_b.exit, label %pregion_for_entry.pregion_for_init.i.i, !llvm.loop !52

_pocl_kernel_pack_b.exit:                         ; preds = %pregion_for_end.i.i
  call void @llvm.lifetime.end.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i.i), !noalias !64
  ret void
}

; Function Attrs: nofree nosync nounwind
define void @_pocl_kernel_pack_b_workgroup_fast(ptr nocapture readonly %0, ptr nocapture readnone %1, i64 %2, i64 %3, i64 %4) local_unnamed_addr #4 {
  %.t.i.pocl_context.i.i = alloca [1 x [16 x [64 x [16 x float]]]], align 64
  %6 = load ptr, ptr %0, align 8
  %7 = getelementptr ptr, ptr %0, i64 1
  %8 = load ptr, ptr %7, align 8
  %9 = getelementptr ptr, ptr %0, i64 2
  %10 = load ptr, ptr %9, align 8
  %11 = load i32, ptr %10, align 4
  %12 = getelementptr ptr, ptr %0, i64 3
  %13 = load ptr, ptr %12, align 8
  %14 = load i32, ptr %13, align 4
  tail call void @llvm.experimental.noalias.scope.decl(metadata !68)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !71)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !73)
  tail call void @llvm.experimental.noalias.scope.decl(metadata !76)
  call void @llvm.lifetime.start.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i.i), !noalias !78
  %15 = shl i64 %2, 6
  %16 = shl i64 %3, 4
  %conv4.i.i = sext i32 %11 to i64
  %conv15.i.i = sext i32 %14 to i64
  br label %pregion_for_entry.pregion_for_init.i.i

pregion_for_entry.pregion_for_init.i.i:           ; preds = %pregion_for_end.i.i, %5
  %_local_id_y.i.0 = phi i64 [ 0, %5 ], [ %103, %pregion_for_end.i.i ]
  %17 = add nuw nsw i64 %_local_id_y.i.0, %16
  %conv2.i.i = trunc i64 %17 to i32
  %sext.i.i = shl i64 %17, 32
  %conv3.i.i = ashr exact i64 %sext.i.i, 32
  %mul5.i.i = mul nsw i64 %conv3.i.i, %conv4.i.i
  %add.ptr.i.i = getelementptr inbounds float, ptr %6, i64 %mul5.i.i
  %cmp.i.i = icmp sgt i32 %14, %conv2.i.i
  %cmp.i.i.fr = freeze i1 %cmp.i.i
  br i1 %cmp.i.i.fr, label %pregion_for_entry.entry.i.i.preheader, label %pregion_for_end.i.i

pregion_for_entry.entry.i.i.preheader:            ; preds = %pregion_for_entry.pregion_for_init.i.i
  br label %pregion_for_entry.entry.i.i

pregion_for_entry.entry.i.i:                      ; preds = %if.end.r_exit.i.i, %pregion_for_entry.entry.i.i.preheader
  %_local_id_x.i.0 = phi i64 [ %102, %if.end.r_exit.i.i ], [ 0, %pregion_for_entry.entry.i.i.preheader ]
  %18 = add nuw nsw i64 %_local_id_x.i.0, %15
  %call.tr.i.i = trunc i64 %18 to i32
  %conv.i.i = shl i32 %call.tr.i.i, 4
  %idx.ext.i.i = sext i32 %conv.i.i to i64
  %add.ptr6.i.i = getelementptr inbounds float, ptr %add.ptr.i.i, i64 %idx.ext.i.i
  %cmp8.i.i = icmp sgt i32 %11, %conv.i.i
  br i1 %cmp8.i.i, label %if.then.i.i, label %if.end.r_exit.i.i

if.then.i.i:                                      ; preds = %pregion_for_entry.entry.i.i
  %add.i.i = add nsw i32 %conv.i.i, 16
  %cmp10.not.i.i = icmp sgt i32 %add.i.i, %11
  br i1 %cmp10.not.i.i, label %cond.false.i.i, label %cond.true.i.i

cond.true.i.i:                                    ; preds = %if.then.i.i
  %19 = load <2 x float>, ptr %add.ptr6.i.i, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %20 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 2
  %21 = load <2 x float>, ptr %20, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %22 = shufflevector <2 x float> %19, <2 x float> %21, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %23 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 4
  %24 = load <2 x float>, ptr %23, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %25 = getelementptr inbounds float, ptr %23, i64 2
  %26 = load <2 x float>, ptr %25, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %27 = shufflevector <2 x float> %24, <2 x float> %26, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %28 = shufflevector <4 x float> %22, <4 x float> %27, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %29 = getelementptr inbounds float, ptr %add.ptr6.i.i, i64 8
  %30 = load <2 x float>, ptr %29, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %31 = getelementptr inbounds float, ptr %29, i64 2
  %32 = load <2 x float>, ptr %31, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %33 = shufflevector <2 x float> %30, <2 x float> %32, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %34 = getelementptr inbounds float, ptr %29, i64 4
  %35 = load <2 x float>, ptr %34, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %36 = getelementptr inbounds float, ptr %34, i64 2
  %37 = load <2 x float>, ptr %36, align 4, !tbaa !39, !alias.scope !79, !noalias !80, !llvm.access.group !43
  %38 = shufflevector <2 x float> %35, <2 x float> %37, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %39 = shufflevector <4 x float> %33, <4 x float> %38, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %40 = shufflevector <8 x float> %28, <8 x float> %39, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i.i

cond.false.i.i:                                   ; preds = %if.then.i.i
  %sub.i.i = sub nsw i32 %11, %conv.i.i
  %41 = sext i32 %sub.i.i to i64
  %broadcast.splatinsert.i.i = insertelement <8 x i64> poison, i64 %41, i64 0
  %broadcast.splat.i.i = shufflevector <8 x i64> %broadcast.splatinsert.i.i, <8 x i64> poison, <8 x i32> zeroinitializer
  br label %vector.body.i.i

vector.body.i.i:                                  ; preds = %vector.body.i.i, %cond.false.i.i
  %vec.ind.next.i.i4 = phi <8 x i64> [ %vec.ind.next.i.i, %vector.body.i.i ], [ <i64 0, i64 1, i64 2, i64 3, i64 4, i64 5, i64 6, i64 7>, %cond.false.i.i ]
  %index.next.i.i2 = phi i64 [ %index.next.i.i, %vector.body.i.i ], [ 0, %cond.false.i.i ]
  %42 = icmp slt <8 x i64> %vec.ind.next.i.i4, %broadcast.splat.i.i
  %43 = getelementptr float, ptr %add.ptr6.i.i, i64 %index.next.i.i2
  %wide.masked.load.i.i = tail call <8 x float> @llvm.masked.load.v8f32.p0(ptr %43, i32 4, <8 x i1> %42, <8 x float> zeroinitializer), !tbaa !39, !alias.scope !68, !noalias !80, !llvm.access.group !43
  %44 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 %index.next.i.i2
  store <8 x float> %wide.masked.load.i.i, ptr %44, align 32, !tbaa !39, !noalias !81, !llvm.access.group !43
  %index.next.i.i = add nuw nsw i64 %index.next.i.i2, 8
  %vec.ind.next.i.i = add <8 x i64> %vec.ind.next.i.i4, <i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8, i64 8>
  %45 = icmp eq i64 %index.next.i.i, 16
  br i1 %45, label %load_part.exit.i.i, label %vector.body.i.i, !llvm.loop !47

load_part.exit.i.i:                               ; preds = %vector.body.i.i
  %46 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0
  %47 = load <2 x float>, ptr %46, align 64, !tbaa !39, !noalias !81, !llvm.access.group !43
  %48 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 2
  %49 = load <2 x float>, ptr %48, align 8, !tbaa !39, !noalias !81, !llvm.access.group !43
  %50 = shufflevector <2 x float> %47, <2 x float> %49, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %51 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 4
  %52 = load <2 x float>, ptr %51, align 16, !tbaa !39, !noalias !81, !llvm.access.group !43
  %53 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 6
  %54 = load <2 x float>, ptr %53, align 8, !tbaa !39, !noalias !81, !llvm.access.group !43
  %55 = shufflevector <2 x float> %52, <2 x float> %54, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %56 = shufflevector <4 x float> %50, <4 x float> %55, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %57 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 8
  %58 = load <2 x float>, ptr %57, align 32, !tbaa !39, !noalias !81, !llvm.access.group !43
  %59 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 10
  %60 = load <2 x float>, ptr %59, align 8, !tbaa !39, !noalias !81, !llvm.access.group !43
  %61 = shufflevector <2 x float> %58, <2 x float> %60, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %62 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 12
  %63 = load <2 x float>, ptr %62, align 16, !tbaa !39, !noalias !81, !llvm.access.group !43
  %64 = getelementptr [1 x [16 x [64 x [16 x float]]]], ptr %.t.i.pocl_context.i.i, i64 0, i64 0, i64 %_local_id_y.i.0, i64 %_local_id_x.i.0, i64 14
  %65 = load <2 x float>, ptr %64, align 8, !tbaa !39, !noalias !81, !llvm.access.group !43
  %66 = shufflevector <2 x float> %63, <2 x float> %65, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %67 = shufflevector <4 x float> %61, <4 x float> %66, <8 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7>
  %68 = shufflevector <8 x float> %56, <8 x float> %67, <16 x i32> <i32 0, i32 1, i32 2, i32 3, i32 4, i32 5, i32 6, i32 7, i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  br label %cond.end.i.i

cond.end.i.i:                                     ; preds = %load_part.exit.i.i, %cond.true.i.i
  %69 = phi <16 x float> [ %68, %load_part.exit.i.i ], [ %40, %cond.true.i.i ]
  %div.i.i = sdiv i32 %conv.i.i, 16
  %conv14.i.i = sext i32 %div.i.i to i64
  %mul16.i.i = mul nsw i64 %conv14.i.i, %conv15.i.i
  %add18.i.i = add nsw i64 %mul16.i.i, %conv3.i.i
  %mul19.i.i = shl i64 %add18.i.i, 4
  %add.ptr20.i.i = getelementptr inbounds float, ptr %8, i64 %mul19.i.i
  %70 = shufflevector <16 x float> %69, <16 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %71 = bitcast <4 x float> %70 to <2 x double>
  %72 = extractelement <2 x double> %71, i64 0
  %73 = bitcast double %72 to <2 x float>
  %74 = extractelement <2 x double> %71, i64 1
  %75 = bitcast double %74 to <2 x float>
  %76 = shufflevector <2 x float> %73, <2 x float> %75, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %76, ptr %add.ptr20.i.i, align 4, !tbaa !39, !alias.scope !80, !noalias !79, !llvm.access.group !43
  %77 = shufflevector <16 x float> %69, <16 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %78 = getelementptr inbounds float, ptr %add.ptr20.i.i, i64 4
  %79 = bitcast <4 x float> %77 to <2 x double>
  %80 = extractelement <2 x double> %79, i64 0
  %81 = bitcast double %80 to <2 x float>
  %82 = extractelement <2 x double> %79, i64 1
  %83 = bitcast double %82 to <2 x float>
  %84 = shufflevector <2 x float> %81, <2 x float> %83, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %84, ptr %78, align 4, !tbaa !39, !alias.scope !80, !noalias !79, !llvm.access.group !43
  %85 = shufflevector <16 x float> %69, <16 x float> poison, <8 x i32> <i32 8, i32 9, i32 10, i32 11, i32 12, i32 13, i32 14, i32 15>
  %86 = getelementptr inbounds float, ptr %add.ptr20.i.i, i64 8
  %87 = shufflevector <8 x float> %85, <8 x float> poison, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  %88 = bitcast <4 x float> %87 to <2 x double>
  %89 = extractelement <2 x double> %88, i64 0
  %90 = bitcast double %89 to <2 x float>
  %91 = extractelement <2 x double> %88, i64 1
  %92 = bitcast double %91 to <2 x float>
  %93 = shufflevector <2 x float> %90, <2 x float> %92, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %93, ptr %86, align 4, !tbaa !39, !alias.scope !80, !noalias !79, !llvm.access.group !43
  %94 = shufflevector <8 x float> %85, <8 x float> poison, <4 x i32> <i32 4, i32 5, i32 6, i32 7>
  %95 = getelementptr inbounds float, ptr %86, i64 4
  %96 = bitcast <4 x float> %94 to <2 x double>
  %97 = extractelement <2 x double> %96, i64 0
  %98 = bitcast double %97 to <2 x float>
  %99 = extractelement <2 x double> %96, i64 1
  %100 = bitcast double %99 to <2 x float>
  %101 = shufflevector <2 x float> %98, <2 x float> %100, <4 x i32> <i32 0, i32 1, i32 2, i32 3>
  store <4 x float> %101, ptr %95, align 4, !tbaa !39, !alias.scope !80, !noalias !79, !llvm.access.group !43
  br label %if.end.r_exit.i.i

if.end.r_exit.i.i:                                ; preds = %cond.end.i.i, %pregion_for_entry.entry.i.i
  %102 = add nuw nsw i64 %_local_id_x.i.0, 1
  %exitcond.not = icmp eq i64 %102, 64
  br i1 %exitcond.not, label %pregion_for_end.i.i.loopexit, label %pregion_for_entry.entry.i.i, !llvm.loop !50

pregion_for_end.i.i.loopexit:                     ; preds = %if.end.r_exit.i.i
  br label %pregion_for_end.i.i

pregion_for_end.i.i:                              ; preds = %pregion_for_end.i.i.loopexit, %pregion_for_entry.pregion_for_init.i.i
  %103 = add nuw nsw i64 %_local_id_y.i.0, 1
  %exitcond6.not = icmp eq i64 %103, 16
  br i1 %exitcond6.not, label %_pocl_kernel_pack_b.exit, label %pregion_for_entry.pregion_for_init.i.i, !llvm.loop !52

_pocl_kernel_pack_b.exit:                         ; preds = %pregion_for_end.i.i
  call void @llvm.lifetime.end.p0(i64 65536, ptr nonnull %.t.i.pocl_context.i.i), !noalias !78
  ret void
}

attributes #0 = { argmemonly nocallback nofree nosync nounwind willreturn }
attributes #1 = { argmemonly nocallback nofree nosync nounwind readonly willreturn }
attributes #2 = { alwaysinline nofree norecurse nosync nounwind "frame-pointer"="none" "min-legal-vector-width"="512" "no-builtins" "no-trapping-math"="true" "stack-protector-buffer-size"="8" "stackrealign" "target-cpu"="skylake-avx512" "target-features"="+adx,+aes,+avx,+avx2,+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512vl,+bmi,+bmi2,+clflushopt,+clwb,+crc32,+cx16,+cx8,+f16c,+fma,+fsgsbase,+fxsr,+invpcid,+lzcnt,+mmx,+movbe,+pclmul,+pku,+popcnt,+prfchw,+rdrnd,+rdseed,+sahf,+sse,+sse2,+sse3,+sse4.1,+sse4.2,+ssse3,+x87,+xsave,+xsavec,+xsaveopt,+xsaves" "uniform-work-group-size"="false" }
attributes #3 = { inaccessiblememonly nocallback nofree nosync nounwind willreturn }
attributes #4 = { nofree nosync nounwind }

!llvm.module.flags = !{!0, !1, !2}
!opencl.ocl.version = !{!3}
!llvm.ident = !{!4}
!opencl.spir.version = !{!5}
!pocl_meta = !{!6, !7, !8, !9, !10, !11, !12, !13, !14, !15, !16, !17, !18, !19, !20, !21, !22, !23, !24, !25, !26, !27}

!0 = !{i32 1, !"wchar_size", i32 4}
!1 = !{i32 7, !"PIC Level", i32 2}
!2 = !{i32 7, !"PIE Level", i32 2}
!3 = !{i32 3, i32 0}
!4 = !{!"Debian clang version 15.0.6"}
!5 = !{i32 1, i32 2}
!6 = !{!"device_address_bits", i64 64}
!7 = !{!"device_arg_buffer_launcher", i8 0}
!8 = !{!"device_grid_launcher", i8 0}
!9 = !{!"device_is_spmd", i8 0}
!10 = !{!"KernelName", !"pack_b"}
!11 = !{!"WGMaxGridDimWidth", i64 65535}
!12 = !{!"WGLocalSizeX", i64 64}
!13 = !{!"WGLocalSizeY", i64 16}
!14 = !{!"WGLocalSizeZ", i64 1}
!15 = !{!"WGDynamicLocalSize", i8 0}
!16 = !{!"WGAssumeZeroGlobalOffset", i8 1}
!17 = !{!"device_global_as_id", i64 0}
!18 = !{!"device_local_as_id", i64 0}
!19 = !{!"device_constant_as_id", i64 0}
!20 = !{!"device_args_as_id", i64 0}
!21 = !{!"device_context_as_id", i64 0}
!22 = !{!"device_side_printf", i8 1}
!23 = !{!"device_alloca_locals", i8 0}
!24 = !{!"device_max_witem_dim", i64 3}
!25 = !{!"device_max_witem_sizes_0", i64 4096}
!26 = !{!"device_max_witem_sizes_1", i64 4096}
!27 = !{!"device_max_witem_sizes_2", i64 4096}
!28 = !{i32 1, i32 1, i32 0, i32 0}
!29 = !{!"none", !"none", !"none", !"none"}
!30 = !{!"float*", !"float*", !"int", !"int"}
!31 = !{!"restrict const", !"restrict", !"", !""}
!32 = !{!"B", !"Bp", !"N", !"K"}
!33 = !{i32 1}
!34 = !{!35}
!35 = distinct !{!35, !36, !"pack_b: %B"}
!36 = distinct !{!36, !"pack_b"}
!37 = !{!38}
!38 = distinct !{!38, !36, !"pack_b: %Bp"}
!39 = !{!40, !40, i64 0}
!40 = !{!"float", !41, i64 0}
!41 = !{!"omnipotent char", !42, i64 0}
!42 = !{!"Simple C/C++ TBAA"}
!43 = !{!44, !45}
!44 = distinct !{}
!45 = distinct !{}
!46 = !{!35, !38}
!47 = distinct !{!47, !48, !49}
!48 = !{!"llvm.loop.unroll.disable"}
!49 = !{!"llvm.loop.isvectorized", i32 1}
!50 = distinct !{!50, !51}
!51 = !{!"llvm.loop.parallel_accesses", !44}
!52 = distinct !{!52, !53}
!53 = !{!"llvm.loop.parallel_accesses", !45}
!54 = !{!55}
!55 = distinct !{!55, !56, !"_pocl_kernel_pack_b: argument 0"}
!56 = distinct !{!56, !"_pocl_kernel_pack_b"}
!57 = !{!58}
!58 = distinct !{!58, !56, !"_pocl_kernel_pack_b: argument 1"}
!59 = !{!60}
!60 = distinct !{!60, !61, !"pack_b: %B"}
!61 = distinct !{!61, !"pack_b"}
!62 = !{!63}
!63 = distinct !{!63, !61, !"pack_b: %Bp"}
!64 = !{!55, !58}
!65 = !{!60, !55}
!66 = !{!63, !58}
!67 = !{!60, !63, !55, !58}
!68 = !{!69}
!69 = distinct !{!69, !70, !"_pocl_kernel_pack_b: argument 0"}
!70 = distinct !{!70, !"_pocl_kernel_pack_b"}
!71 = !{!72}
!72 = distinct !{!72, !70, !"_pocl_kernel_pack_b: argument 1"}
!73 = !{!74}
!74 = distinct !{!74, !75, !"pack_b: %B"}
!75 = distinct !{!75, !"pack_b"}
!76 = !{!77}
!77 = distinct !{!77, !75, !"pack_b: %Bp"}
!78 = !{!69, !72}
!79 = !{!74, !69}
!80 = !{!77, !72}
!81 = !{!74, !77, !69, !72}
