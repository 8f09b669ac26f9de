// sh: a small shell.
//
// Reads a line, splits it into words at blanks, and runs the program named by
// the first word with all the words as its argv. There is no fork: spawn()
// starts a program directly. A trailing `&` (as a word of its own or stuck to
// the last word) starts the program in the background: the shell does not
// wait for it, and reports its exit when it next waits for something.
//
// Builtins: exit [status], kill PID, help.
#include "ulib.h"

#define MAXLINE 512
// More words than the kernel accepts, so that an over-long command reaches
// spawn() and the kernel's E2BIG is what the user sees.
#define MAXWORDS (MAXARG + 8)

// Splits line in place into words separated by spaces and tabs. Returns the
// number of words, or -1 if there are more than max.
static int split(char *line, char *words[], int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == 0)
      break;
    if (n == max)
      return -1;
    words[n++] = p;
    while (*p && *p != ' ' && *p != '\t')
      p++;
    if (*p)
      *p++ = 0;
  }
  words[n] = NULL;
  return n;
}

// Background children that finish while the shell waits for a foreground one
// are reaped and reported on the way: wait(-1) returns whichever child exited
// first.
static void report_background(int pid, int status) {
  printf("sh: background pid %d done, exit status %d\n", pid, status);
}

static void run(char *words[], int background) {
  const char *name = words[0];
  int pid = spawn(name, (const char *const *)words);
  if (pid == -ENOENT) {
    printf("sh: %s: no such program\n", name);
    return;
  }
  if (pid == -E2BIG) {
    printf("sh: %s: argument list too long (at most %d words of %d bytes)\n", name, MAXARG,
           MAXARGLEN - 1);
    return;
  }
  if (pid < 0) {
    printf("sh: %s: cannot start: %d %s\n", name, pid, errname(pid));
    return;
  }
  if (background) {
    printf("sh: %s running in the background as pid %d\n", name, pid);
    return;
  }
  int status;
  int err = wait_for(pid, &status, report_background);
  if (err < 0)
    printf("sh: %s: wait failed: %d %s\n", name, err, errname(err));
  else if (status != 0)
    printf("sh: %s: exit status %d\n", name, status);
}

static void help(void) {
  printf("builtins:\n"
         "  exit [STATUS]   leave the shell\n"
         "  kill PID        end a process (its exit status is -1)\n"
         "  help            this text\n"
         "anything else runs a program: NAME ARGS... (add & to run it in the background)\n"
         "programs: hello echo sh init usertests fault spin sleeper pipetest\n");
}

int main(void) {
  static char line[MAXLINE];
  char *words[MAXWORDS + 1];

  printf("sh: pid %d; type 'help' for commands\n", getpid());
  for (;;) {
    printf("$ ");
    if (readline(line, sizeof line) < 0)
      break;   // end of input

    int n = split(line, words, MAXWORDS);
    if (n < 0) {
      printf("sh: too many words (at most %d)\n", MAXWORDS);
      continue;
    }
    if (n == 0)
      continue;

    int background = 0;
    size_t len = strlen(words[n - 1]);
    if (strcmp(words[n - 1], "&") == 0) {
      words[--n] = NULL;
      background = 1;
    } else if (words[n - 1][len - 1] == '&') {
      words[n - 1][len - 1] = 0;
      background = 1;
    }
    if (n == 0)
      continue;   // a lone "&"

    if (strcmp(words[0], "exit") == 0) {
      exit(n > 1 ? atoi(words[1]) : 0);
    } else if (strcmp(words[0], "help") == 0) {
      help();
    } else if (strcmp(words[0], "kill") == 0) {
      if (n < 2) {
        printf("usage: kill PID\n");
        continue;
      }
      int r = kill(atoi(words[1]));
      if (r < 0)
        printf("sh: kill %s: %d %s\n", words[1], r, errname(r));
    } else {
      run(words, background);
    }
  }
  printf("sh: end of input, exiting\n");
  return 0;
}
