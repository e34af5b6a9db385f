#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* eagain CALLS ROUNDS: ns per recv() on an empty non-blocking loopback TCP
   socket (each one fails with EAGAIN), one line per round. */
int main(int argc, char **argv) {
    long calls = atol(argv[1]);
    int rounds = atoi(argv[2]);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (void *)&a, sizeof a) || listen(l, 1) || getsockname(l, (void *)&a, &len)) return 2;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (c < 0 || connect(c, (void *)&a, sizeof a)) return 2;
    int s = accept(l, 0, 0);
    if (s < 0 || fcntl(s, F_SETFL, O_NONBLOCK)) return 2;
    char buf[4096];
    for (int r = 0; r < rounds; r++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (long i = 0; i < calls; i++) {
            if (recv(s, buf, sizeof buf, 0) != -1 || errno != EAGAIN) return 3;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
        printf("%.2f\n", ns / calls);
    }
    return 0;
}
