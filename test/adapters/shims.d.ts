// The older framework majors are installed under aliases (npm:express@4, npm:koa@2); their
// runtime API is the one the current types describe.
declare module 'express4' {
  import express = require('express');
  export = express;
}

declare module 'koa2' {
  import Koa = require('koa');
  export = Koa;
}
