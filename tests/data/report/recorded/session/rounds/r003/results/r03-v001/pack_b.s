
/tmp/evalpod-apNFgS/w/p-r03-v001/pocl/HP/GAIPAGGGIMNGACHKLDFLFPELMFKHCBCJGACKD/pack_b/64-16-1-goffs0-smallgrid/pack_b.so:     file format elf64-x86-64


Disassembly of section .text:

0000000000001000 <_pocl_kernel_pack_b>:
    1000:	push   %rbp
    1001:	mov    %rsp,%rbp
    1004:	push   %r15
    1006:	push   %r14
    1008:	push   %r13
    100a:	push   %r12
    100c:	push   %rbx
    100d:	and    $0xffffffffffffffc0,%rsp
    1011:	sub    $0x10080,%rsp
    1018:	mov    0x10(%rbp),%rbx
    101c:	mov    %r9,%rax
    101f:	shl    $0x6,%rax
    1023:	shl    $0x4,%rbx
    1027:	mov    %rbx,0x30(%rsp)
    102c:	movslq %edx,%rbx
    102f:	mov    %ecx,0xc(%rsp)
    1033:	movslq %ecx,%r11
    1036:	shl    $0xa,%r9d
    103a:	movslq %r9d,%rcx
    103d:	mov    %rdi,0x28(%rsp)
    1042:	lea    (%rdi,%rcx,4),%rcx
    1046:	mov    %rcx,0x18(%rsp)
    104b:	mov    %rbx,0x20(%rsp)
    1050:	lea    0x0(,%rbx,4),%rcx
    1058:	mov    %rcx,0x10(%rsp)
    105d:	lea    0x40(%rsp),%rdi
    1062:	xor    %r13d,%r13d
    1065:	vmovdqa64 0xf91(%rip),%zmm0        # 2000 <_pocl_kernel_pack_b_workgroup_fast+0xc50>
    106f:	vpbroadcastq 0x1047(%rip),%zmm1        # 20c0 <_pocl_kernel_pack_b_workgroup_fast+0xd10>
    1079:	jmp    1094 <_pocl_kernel_pack_b+0x94>
    107b:	nopl   0x0(%rax,%rax,1)
    1080:	inc    %r13
    1083:	add    $0x1000,%rdi
    108a:	cmp    $0x10,%r13
    108e:	je     11b4 <_pocl_kernel_pack_b+0x1b4>
    1094:	mov    0x30(%rsp),%rcx
    1099:	add    %r13,%rcx
    109c:	cmp    0xc(%rsp),%ecx
    10a0:	jge    1080 <_pocl_kernel_pack_b+0x80>
    10a2:	movslq %ecx,%r12
    10a5:	mov    %r12,%rcx
    10a8:	imul   0x20(%rsp),%rcx
    10ae:	mov    0x28(%rsp),%rbx
    10b3:	lea    (%rbx,%rcx,4),%rcx
    10b7:	mov    %rcx,0x38(%rsp)
    10bc:	mov    0x10(%rsp),%r14
    10c1:	imul   %r12,%r14
    10c5:	add    0x18(%rsp),%r14
    10ca:	mov    %rdi,%r15
    10cd:	xor    %r9d,%r9d
    10d0:	jmp    1137 <_pocl_kernel_pack_b+0x137>
    10d2:	data16 data16 data16 data16 cs nopw 0x0(%rax,%rax,1)
    10e0:	movslq %r10d,%rcx
    10e3:	mov    0x38(%rsp),%rbx
    10e8:	vmovdqu64 (%rbx,%rcx,4),%zmm2
    10ef:	lea    0xf(%r10),%ecx
    10f3:	test   %r10d,%r10d
    10f6:	cmovns %r10d,%ecx
    10fa:	sar    $0x4,%ecx
    10fd:	movslq %ecx,%rcx
    1100:	imul   %r11,%rcx
    1104:	add    %r12,%rcx
    1107:	shl    $0x6,%rcx
    110b:	vextracti32x4 $0x1,%zmm2,0x10(%rsi,%rcx,1)
    1114:	vmovdqu %xmm2,(%rsi,%rcx,1)
    1119:	vextracti64x4 $0x1,%zmm2,0x20(%rsi,%rcx,1)
    1122:	inc    %r9
    1125:	add    $0x40,%r14
    1129:	add    $0x40,%r15
    112d:	cmp    $0x40,%r9
    1131:	je     1080 <_pocl_kernel_pack_b+0x80>
    1137:	lea    (%r9,%rax,1),%r10d
    113b:	shl    $0x4,%r10d
    113f:	cmp    %edx,%r10d
    1142:	jge    1122 <_pocl_kernel_pack_b+0x122>
    1144:	lea    0x10(%r10),%ecx
    1148:	cmp    %edx,%ecx
    114a:	jle    10e0 <_pocl_kernel_pack_b+0xe0>
    114c:	mov    %edx,%ecx
    114e:	sub    %r10d,%ecx
    1151:	movslq %ecx,%rcx
    1154:	vpbroadcastq %rcx,%zmm2
    115a:	vmovdqa64 %zmm0,%zmm3
    1160:	xor    %r8d,%r8d
    1163:	data16 data16 data16 cs nopw 0x0(%rax,%rax,1)
    1170:	vpcmpgtq %zmm3,%zmm2,%k1
    1176:	vmovups (%r14,%r8,4),%ymm4{%k1}{z}
    117d:	vmovaps %ymm4,(%r15,%r8,4)
    1183:	add    $0x8,%r8
    1187:	vpaddq %zmm1,%zmm3,%zmm3
    118d:	cmp    $0x10,%r8
    1191:	jne    1170 <_pocl_kernel_pack_b+0x170>
    1193:	mov    %r9,%rcx
    1196:	shl    $0x6,%rcx
    119a:	mov    %r13,%rbx
    119d:	shl    $0xc,%rbx
    11a1:	add    %rsp,%rbx
    11a4:	add    $0x40,%rbx
    11a8:	vmovdqa64 (%rcx,%rbx,1),%zmm2
    11af:	jmp    10ef <_pocl_kernel_pack_b+0xef>
    11b4:	lea    -0x28(%rbp),%rsp
    11b8:	pop    %rbx
    11b9:	pop    %r12
    11bb:	pop    %r13
    11bd:	pop    %r14
    11bf:	pop    %r15
    11c1:	pop    %rbp
    11c2:	vzeroupper
    11c5:	ret
    11c6:	cs nopw 0x0(%rax,%rax,1)

00000000000011d0 <_pocl_kernel_pack_b_workgroup>:
    11d0:	push   %rbp
    11d1:	mov    %rsp,%rbp
    11d4:	push   %r15
    11d6:	push   %r14
    11d8:	push   %r13
    11da:	push   %r12
    11dc:	push   %rbx
    11dd:	and    $0xffffffffffffffc0,%rsp
    11e1:	sub    $0x10080,%rsp
    11e8:	mov    (%rdi),%rax
    11eb:	mov    0x8(%rdi),%rsi
    11ef:	mov    (%rax),%rbx
    11f2:	mov    (%rsi),%rsi
    11f5:	mov    0x10(%rdi),%rax
    11f9:	movslq (%rax),%rax
    11fc:	mov    0x18(%rdi),%rdi
    1200:	movslq (%rdi),%r9
    1203:	mov    %rdx,%r14
    1206:	shl    $0x6,%r14
    120a:	mov    %rcx,%rdi
    120d:	shl    $0x4,%rdi
    1211:	mov    %rdi,0x30(%rsp)
    1216:	shl    $0x4,%ecx
    1219:	movslq %ecx,%rcx
    121c:	imul   %rax,%rcx
    1220:	shl    $0xa,%edx
    1223:	movslq %edx,%rdx
    1226:	shl    $0x2,%rdx
    122a:	lea    (%rdx,%rcx,4),%rcx
    122e:	mov    %rbx,0x20(%rsp)
    1233:	add    %rbx,%rcx
    1236:	mov    %rcx,0x18(%rsp)
    123b:	lea    0x0(,%rax,4),%rcx
    1243:	mov    %rcx,0x28(%rsp)
    1248:	lea    0x40(%rsp),%r12
    124d:	xor    %r15d,%r15d
    1250:	vmovdqa64 0xde6(%rip),%zmm0        # 2040 <_pocl_kernel_pack_b_workgroup_fast+0xc90>
    125a:	vpbroadcastq 0xe5c(%rip),%zmm1        # 20c0 <_pocl_kernel_pack_b_workgroup_fast+0xd10>
    1264:	jmp    128e <_pocl_kernel_pack_b_workgroup+0xbe>
    1266:	cs nopw 0x0(%rax,%rax,1)
    1270:	inc    %r15
    1273:	mov    0x28(%rsp),%rcx
    1278:	add    %rcx,0x18(%rsp)
    127d:	add    $0x1000,%r12
    1284:	cmp    $0x10,%r15
    1288:	je     1394 <_pocl_kernel_pack_b_workgroup+0x1c4>
    128e:	mov    0x30(%rsp),%rcx
    1293:	add    %r15,%rcx
    1296:	cmp    %ecx,%r9d
    1299:	jle    1270 <_pocl_kernel_pack_b_workgroup+0xa0>
    129b:	movslq %ecx,%r13
    129e:	mov    %r13,%rcx
    12a1:	imul   %rax,%rcx
    12a5:	mov    0x20(%rsp),%rdx
    12aa:	lea    (%rdx,%rcx,4),%rcx
    12ae:	mov    %rcx,0x38(%rsp)
    12b3:	mov    %r12,%rdx
    12b6:	mov    0x18(%rsp),%rcx
    12bb:	xor    %r8d,%r8d
    12be:	jmp    1317 <_pocl_kernel_pack_b_workgroup+0x147>
    12c0:	movslq %r10d,%rbx
    12c3:	mov    0x38(%rsp),%rdi
    12c8:	vmovdqu64 (%rdi,%rbx,4),%zmm2
    12cf:	lea    0xf(%r10),%edi
    12d3:	test   %r10d,%r10d
    12d6:	cmovns %r10d,%edi
    12da:	sar    $0x4,%edi
    12dd:	movslq %edi,%rdi
    12e0:	imul   %r9,%rdi
    12e4:	add    %r13,%rdi
    12e7:	shl    $0x6,%rdi
    12eb:	vextracti32x4 $0x1,%zmm2,0x10(%rsi,%rdi,1)
    12f4:	vmovdqu %xmm2,(%rsi,%rdi,1)
    12f9:	vextracti64x4 $0x1,%zmm2,0x20(%rsi,%rdi,1)
    1302:	inc    %r8
    1305:	add    $0x40,%rcx
    1309:	add    $0x40,%rdx
    130d:	cmp    $0x40,%r8
    1311:	je     1270 <_pocl_kernel_pack_b_workgroup+0xa0>
    1317:	lea    (%r8,%r14,1),%r10d
    131b:	shl    $0x4,%r10d
    131f:	cmp    %r10d,%eax
    1322:	jle    1302 <_pocl_kernel_pack_b_workgroup+0x132>
    1324:	lea    0x10(%r10),%ebx
    1328:	cmp    %eax,%ebx
    132a:	jle    12c0 <_pocl_kernel_pack_b_workgroup+0xf0>
    132c:	mov    %eax,%ebx
    132e:	sub    %r10d,%ebx
    1331:	movslq %ebx,%rbx
    1334:	vpbroadcastq %rbx,%zmm2
    133a:	vmovdqa64 %zmm0,%zmm3
    1340:	xor    %r11d,%r11d
    1343:	data16 data16 data16 cs nopw 0x0(%rax,%rax,1)
    1350:	vpcmpgtq %zmm3,%zmm2,%k1
    1356:	vmovups (%rcx,%r11,4),%ymm4{%k1}{z}
    135d:	vmovaps %ymm4,(%rdx,%r11,4)
    1363:	add    $0x8,%r11
    1367:	vpaddq %zmm1,%zmm3,%zmm3
    136d:	cmp    $0x10,%r11
    1371:	jne    1350 <_pocl_kernel_pack_b_workgroup+0x180>
    1373:	mov    %r8,%rbx
    1376:	shl    $0x6,%rbx
    137a:	mov    %r15,%rdi
    137d:	shl    $0xc,%rdi
    1381:	add    %rsp,%rdi
    1384:	add    $0x40,%rdi
    1388:	vmovdqa64 (%rbx,%rdi,1),%zmm2
    138f:	jmp    12cf <_pocl_kernel_pack_b_workgroup+0xff>
    1394:	lea    -0x28(%rbp),%rsp
    1398:	pop    %rbx
    1399:	pop    %r12
    139b:	pop    %r13
    139d:	pop    %r14
    139f:	pop    %r15
    13a1:	pop    %rbp
    13a2:	vzeroupper
    13a5:	ret
    13a6:	cs nopw 0x0(%rax,%rax,1)

00000000000013b0 <_pocl_kernel_pack_b_workgroup_fast>:
    13b0:	push   %rbp
    13b1:	mov    %rsp,%rbp
    13b4:	push   %r15
    13b6:	push   %r14
    13b8:	push   %r13
    13ba:	push   %r12
    13bc:	push   %rbx
    13bd:	and    $0xffffffffffffffc0,%rsp
    13c1:	sub    $0x10080,%rsp
    13c8:	mov    (%rdi),%rbx
    13cb:	mov    0x8(%rdi),%rsi
    13cf:	mov    0x10(%rdi),%rax
    13d3:	movslq (%rax),%rax
    13d6:	mov    0x18(%rdi),%rdi
    13da:	movslq (%rdi),%r9
    13dd:	mov    %rdx,%r14
    13e0:	shl    $0x6,%r14
    13e4:	mov    %rcx,%rdi
    13e7:	shl    $0x4,%rdi
    13eb:	mov    %rdi,0x30(%rsp)
    13f0:	shl    $0x4,%ecx
    13f3:	movslq %ecx,%rcx
    13f6:	imul   %rax,%rcx
    13fa:	shl    $0xa,%edx
    13fd:	movslq %edx,%rdx
    1400:	shl    $0x2,%rdx
    1404:	lea    (%rdx,%rcx,4),%rcx
    1408:	mov    %rbx,0x20(%rsp)
    140d:	add    %rbx,%rcx
    1410:	mov    %rcx,0x18(%rsp)
    1415:	lea    0x0(,%rax,4),%rcx
    141d:	mov    %rcx,0x28(%rsp)
    1422:	lea    0x40(%rsp),%r12
    1427:	xor    %r15d,%r15d
    142a:	vmovdqa64 0xc4c(%rip),%zmm0        # 2080 <_pocl_kernel_pack_b_workgroup_fast+0xcd0>
    1434:	vpbroadcastq 0xc82(%rip),%zmm1        # 20c0 <_pocl_kernel_pack_b_workgroup_fast+0xd10>
    143e:	jmp    145e <_pocl_kernel_pack_b_workgroup_fast+0xae>
    1440:	inc    %r15
    1443:	mov    0x28(%rsp),%rcx
    1448:	add    %rcx,0x18(%rsp)
    144d:	add    $0x1000,%r12
    1454:	cmp    $0x10,%r15
    1458:	je     1564 <_pocl_kernel_pack_b_workgroup_fast+0x1b4>
    145e:	mov    0x30(%rsp),%rcx
    1463:	add    %r15,%rcx
    1466:	cmp    %ecx,%r9d
    1469:	jle    1440 <_pocl_kernel_pack_b_workgroup_fast+0x90>
    146b:	movslq %ecx,%r13
    146e:	mov    %r13,%rcx
    1471:	imul   %rax,%rcx
    1475:	mov    0x20(%rsp),%rdx
    147a:	lea    (%rdx,%rcx,4),%rcx
    147e:	mov    %rcx,0x38(%rsp)
    1483:	mov    %r12,%rdx
    1486:	mov    0x18(%rsp),%rcx
    148b:	xor    %r8d,%r8d
    148e:	jmp    14e7 <_pocl_kernel_pack_b_workgroup_fast+0x137>
    1490:	movslq %r10d,%rbx
    1493:	mov    0x38(%rsp),%rdi
    1498:	vmovdqu64 (%rdi,%rbx,4),%zmm2
    149f:	lea    0xf(%r10),%edi
    14a3:	test   %r10d,%r10d
    14a6:	cmovns %r10d,%edi
    14aa:	sar    $0x4,%edi
    14ad:	movslq %edi,%rdi
    14b0:	imul   %r9,%rdi
    14b4:	add    %r13,%rdi
    14b7:	shl    $0x6,%rdi
    14bb:	vextracti32x4 $0x1,%zmm2,0x10(%rsi,%rdi,1)
    14c4:	vmovdqu %xmm2,(%rsi,%rdi,1)
    14c9:	vextracti64x4 $0x1,%zmm2,0x20(%rsi,%rdi,1)
    14d2:	inc    %r8
    14d5:	add    $0x40,%rcx
    14d9:	add    $0x40,%rdx
    14dd:	cmp    $0x40,%r8
    14e1:	je     1440 <_pocl_kernel_pack_b_workgroup_fast+0x90>
    14e7:	lea    (%r8,%r14,1),%r10d
    14eb:	shl    $0x4,%r10d
    14ef:	cmp    %r10d,%eax
    14f2:	jle    14d2 <_pocl_kernel_pack_b_workgroup_fast+0x122>
    14f4:	lea    0x10(%r10),%ebx
    14f8:	cmp    %eax,%ebx
    14fa:	jle    1490 <_pocl_kernel_pack_b_workgroup_fast+0xe0>
    14fc:	mov    %eax,%ebx
    14fe:	sub    %r10d,%ebx
    1501:	movslq %ebx,%rbx
    1504:	vpbroadcastq %rbx,%zmm2
    150a:	vmovdqa64 %zmm0,%zmm3
    1510:	xor    %r11d,%r11d
    1513:	data16 data16 data16 cs nopw 0x0(%rax,%rax,1)
    1520:	vpcmpgtq %zmm3,%zmm2,%k1
    1526:	vmovups (%rcx,%r11,4),%ymm4{%k1}{z}
    152d:	vmovaps %ymm4,(%rdx,%r11,4)
    1533:	add    $0x8,%r11
    1537:	vpaddq %zmm1,%zmm3,%zmm3
    153d:	cmp    $0x10,%r11
    1541:	jne    1520 <_pocl_kernel_pack_b_workgroup_fast+0x170>
    1543:	mov    %r8,%rbx
    1546:	shl    $0x6,%rbx
    154a:	mov    %r15,%rdi
    154d:	shl    $0xc,%rdi
    1551:	add    %rsp,%rdi
    1554:	add    $0x40,%rdi
    1558:	vmovdqa64 (%rbx,%rdi,1),%zmm2
    155f:	jmp    149f <_pocl_kernel_pack_b_workgroup_fast+0xef>
    1564:	lea    -0x28(%rbp),%rsp
    1568:	pop    %rbx
    1569:	pop    %r12
    156b:	pop    %r13
    156d:	pop    %r14
    156f:	pop    %r15
    1571:	pop    %rbp
    1572:	vzeroupper
    1575:	ret
