// EVOLVE-BLOCK-START
__kernel void k(__global float *y) { y[get_global_id(0)] = A + B + C + D + E; }
// EVOLVE-BLOCK-END
