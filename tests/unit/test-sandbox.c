#include "test.h"
TEST(placeholder) { CHECK(1); }
int main(void) { RUN(placeholder); return test_summary(); }
