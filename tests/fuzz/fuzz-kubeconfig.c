/*
 * fuzz-kubeconfig.c - the kubeconfig reader (common/kubeconfig.c) on any
 * bytes, written to a file in the harness's folder.  Next to it lie
 * "token" (a token), "token-empty" (0 bytes) and "ca.crt" (not PEM), so
 * that relative tokenFile and certificate-authority paths in an input
 * reach the readers behind them.  Exec plugins run only on refresh, which
 * is not called: nothing is executed.
 */
#include "fuzz.h"
#include "kubeconfig.h"

#include <stdlib.h>
#include <string.h>

static void fuzz_kube_files(void)
{
	static int done;

	if (done)
		return;
	done = 1;
	free(fuzz_write("token", "tok-123\n", 8));
	free(fuzz_write("token-empty", "", 0));
	free(fuzz_write("ca.crt", "not a certificate\n", 18));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kubeconfig kc;
	char *path, msg[1024];

	fuzz_kube_files();
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	path = fuzz_write("config", data, size);
	memset(&kc, 0, sizeof(kc));
	kubeconfig_load(&kc, path, NULL, msg, sizeof(msg));
	kubeconfig_release(&kc);
	free(path);
	return 0;
}
